//! `dbvs compare --studies A B`: two stored studies of one design (the same study file run
//! on two dates, machines or dbvs versions) side by side. Every comparison's ratio in each,
//! how far it moved with a Welch interval from both studies' noise, and each variant's
//! means the same way: on a VM whose speed drifts between days the means may move while
//! the ratios, the product, hold.

use super::results::{open, row, table};
use crate::report::{Comparison, MeasureReport, StudyReport};
use crate::stats::{mean_shift, ratio_shift, Shift, Summary};
use crate::sys::names::printable;
use anyhow::{Context, Result};
use std::process::ExitCode;

fn load(id: i64) -> Result<StudyReport> {
    let (row, json) = open()?.study(id)?;
    let json =
        json.with_context(|| format!("study {id} ({}) has no report to compare: it ended {}", row.name, row.status))?;
    serde_json::from_str(&json).with_context(|| format!("study {id}'s stored report is unreadable"))
}

fn pct(f: f64) -> String {
    format!("{:+.1}%", 100.0 * (f - 1.0))
}

/// What a shift is called: beyond the noise, and within it.
pub(super) type Words = [&'static str; 2];
const MOVED: Words = ["moved", "within noise"];

fn shift_cells(s: Option<&Shift>, [beyond, within]: Words) -> [String; 2] {
    match s {
        Some(s) => [
            format!("{} [{}, {}]", pct(s.factor), pct(s.ci.0), pct(s.ci.1)),
            (if s.beyond_noise { beyond } else { within }).to_string(),
        ],
        None => ["-".into(), "too few blocks".into()],
    }
}

fn ratio_cell(c: &Comparison) -> String {
    format!("{:.3} [{:.3}, {:.3}]", c.estimate.ratio, c.estimate.ci.0, c.estimate.ci.1)
}

fn mean_cell(s: &Summary) -> String {
    format!("{} (n {})", crate::report::tables::number(s.mean), s.n)
}

/// Who a comparison is against, for a row label.
fn label(c: &Comparison, baseline: &str) -> String {
    format!("{} vs {}", c.variant, c.against.as_deref().unwrap_or(baseline))
}

fn study_line(r: &StudyReport) -> String {
    let h = &r.sut.host;
    format!(
        "study {} '{}' started {}: {} blocks of {:.1} s; {} ({} cores), kernel {}, dbvs {}",
        r.study_id,
        r.name,
        r.started_at,
        r.blocks_completed,
        r.seconds_per_block,
        h.cpu_model,
        h.cores,
        h.kernel,
        r.sut.dbvs_version
    )
}

/// Every comparison of `a` that `b` also made, with how far it moved.
pub(super) fn ratio_rows(
    a: &StudyReport,
    b: &StudyReport,
    confidence: f64,
    words: Words,
) -> (Vec<Vec<String>>, usize, Vec<String>) {
    let (mut rows, mut moved, mut missing) = (vec![], 0, vec![]);
    for ma in &a.measures {
        let mb = b.measures.iter().find(|m| m.measure.key() == ma.measure.key());
        for ca in every(ma) {
            let cb = mb.and_then(|mb| every(mb).find(|c| c.variant == ca.variant && c.against == ca.against));
            let Some(cb) = cb else {
                missing.push(format!("{} {}", label(ca, &a.baseline), ma.measure.key()));
                continue;
            };
            let at = |c: &Comparison| (c.estimate.ratio, c.estimate.ci, c.estimate.n, c.estimate.confidence);
            let shift = ratio_shift(at(ca), at(cb), confidence);
            moved += shift.as_ref().is_some_and(|s| s.beyond_noise) as usize;
            let [change, word] = shift_cells(shift.as_ref(), words);
            rows.push(vec![ma.measure.key(), label(ca, &a.baseline), ratio_cell(ca), ratio_cell(cb), change, word]);
        }
    }
    (rows, moved, missing)
}

fn every(m: &MeasureReport) -> impl Iterator<Item = &Comparison> {
    m.comparisons.iter().chain(&m.controls).chain(&m.pairs)
}

/// Every variant's mean of every measure that both studies have.
fn mean_rows(a: &StudyReport, b: &StudyReport, confidence: f64) -> Vec<Vec<String>> {
    let mut rows = vec![];
    for ma in &a.measures {
        let Some(mb) = b.measures.iter().find(|m| m.measure.key() == ma.measure.key()) else { continue };
        for (variant, sa) in &ma.summaries {
            let Some((_, sb)) = mb.summaries.iter().find(|(v, _)| v == variant) else { continue };
            let [change, word] = shift_cells(mean_shift(sa, sb, confidence).as_ref(), MOVED);
            rows.push(vec![ma.measure.key(), variant.clone(), mean_cell(sa), mean_cell(sb), change, word]);
        }
    }
    rows
}

pub fn compare_studies(id_a: i64, id_b: i64, fail_if_moved: bool) -> Result<ExitCode> {
    let (a, b) = (load(id_a)?, load(id_b)?);
    let confidence = a.rules.confidence;
    println!("A: {}", printable(&study_line(&a)));
    println!("B: {}", printable(&study_line(&b)));
    if a.sut.study_file != b.sut.study_file {
        println!("note: the two study files differ; the rows below compare what both measured");
    }
    let level = crate::stats::level(confidence);
    let (rows, moved, missing) = ratio_rows(&a, &b, confidence, MOVED);
    let mut t = table(&["measure", "comparison", "A ratio [CI]", "B ratio [CI]", &format!("B vs A [{level} CI]"), ""]);
    for r in rows {
        t.add_row(row(r));
    }
    println!("{t}");
    for m in &missing {
        println!("only in study {id_a}: {}", printable(m));
    }
    let mut t = table(&["measure", "variant", "A mean", "B mean", &format!("B vs A [{level} CI]"), ""]);
    for r in mean_rows(&a, &b, confidence) {
        t.add_row(row(r));
    }
    println!("{t}");
    println!(
        "{moved} of the ratios moved beyond the noise (Welch {level} interval of the change, from each study's \
         per-block noise). Means measure the machine as well as the change: on a VM whose speed drifts, \
         compare the ratios."
    );
    Ok(if fail_if_moved && moved > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
