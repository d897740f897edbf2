//! `dbvs study FILE --validate`: the interleaved study's ratios against the same study run
//! with each variant alone in each block, as a user running each configuration by itself
//! would see them. Interleaving buys precision by sharing the machine's noise; this checks
//! that it does not also move the answer (cache warmth, slice boundaries, shared CPU).

use super::history::ratio_rows;
use super::results::{row, table};
use crate::report::{markdown, tables::Table};
use crate::study::Outcome;
use anyhow::{Context, Result};

/// Prints the two studies' ratios side by side and writes them to OUT/validate.md.
pub fn report(interleaved: &Outcome, alone: &Outcome) -> Result<()> {
    let (a, b) = (&interleaved.report, &alone.report);
    let confidence = a.rules.confidence;
    let (rows, moved, missing) = ratio_rows(a, b, confidence, ["disagree", "agree"]);
    let level = crate::stats::level(confidence);
    let header = [
        "measure".to_string(),
        "comparison".into(),
        format!("interleaved (study {})", a.study_id),
        format!("alone (study {})", b.study_id),
        format!("alone vs interleaved [{level} CI]"),
        String::new(),
    ];
    let summary = format!(
        "{} of {} ratios agree with the ratio from each variant alone within their joint {level} interval \
         (Welch, from both studies' per-block noise){}",
        rows.len() - moved,
        rows.len(),
        if moved > 0 { "; where they disagree, the interleaved design moved the answer" } else { "" }
    );
    let mut t = table(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for r in &rows {
        t.add_row(row(r.clone()));
    }
    println!("{t}\nvalidate: {summary}");
    for m in &missing {
        println!("validate: only the interleaved study has {m}");
    }
    let mut md = format!("# Study {} validated against each variant alone\n\n- {summary}\n", a.study_id);
    md.push_str(&format!("- alone: study {}, {}\n", b.study_id, alone.out_dir.join("report.html").display()));
    let title = "Each ratio, interleaved and alone".to_string();
    markdown::table(&mut md, &Table { title, header: header.to_vec(), rows });
    let path = interleaved.out_dir.join("validate.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))?;
    println!("validate: {}", path.display());
    Ok(())
}
