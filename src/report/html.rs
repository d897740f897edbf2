//! HTML: one self-contained page (inline SVG and CSS, no scripts, no network).

use super::{charts, tables, StudyReport};
use anyhow::Result;
use std::fmt::Write;

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub fn table(out: &mut String, t: &tables::Table) {
    let _ = write!(out, "<h2>{}</h2>\n<table>\n<tr>", esc(&t.title));
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}th{background:#eee}.chart{margin:1em 0}.charts{display:flex;flex-wrap:wrap;gap:0 1em}\
.status{font-size:1.1em}pre{background:#f6f6f6;padding:1em;overflow:auto}";

/// Opens a self-contained page (every dbvs HTML report shares this head and style); the
/// caller appends the body and closes it with `</body></html>`.
pub fn page(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(title)
    )
}

pub fn render(r: &StudyReport) -> Result<String> {
    let mut out = page(&format!("dbvs study {}: {}", r.study_id, r.name));
    let _ = writeln!(out, "<h1>Study {}: {}</h1>", r.study_id, esc(&r.name));
    let _ = writeln!(
        out,
        "<p class=\"status\">Status: <b>{}</b>{}. {} blocks, {:.0} s per block; stopped: {}. Metric: {} ({} is better); baseline: {}; CI target {}.</p>",
        r.status,
        r.cause.as_ref().map_or(String::new(), |c| format!(" ({})", esc(c))),
        r.blocks_completed,
        r.seconds_per_block,
        esc(&r.stop_reason),
        esc(&r.metric),
        if r.higher_is_better { "higher" } else { "lower" },
        esc(&r.baseline),
        esc(&r.targets().text().replace("+-", "\u{b1}"))
    );
    for d in &r.design {
        let _ = writeln!(out, "<p class=\"status\">Design: {}.</p>", esc(&d.text()));
    }
    for t in &r.turn_starts {
        let _ = writeln!(out, "<p class=\"status\">Turn starts: {}.</p>", esc(&t.text()));
    }
    let _ = writeln!(out, "<h2>Answer</h2>\n<ul class=\"answer\">");
    for line in super::answer::lines(r) {
        let _ = writeln!(out, "<li>{}</li>", esc(&line));
    }
    let _ = writeln!(out, "</ul>\n<div class=\"chart\">{}</div>", charts::forest(r)?);
    table(&mut out, &tables::changes(r));
    for t in [super::ladder::table(r), tables::controls(r), tables::pairs(r)].iter().filter(|t| !t.rows.is_empty()) {
        table(&mut out, t);
    }
    table(&mut out, &tables::stacks(r));
    for t in Some(tables::settings(r)).iter().filter(|t| !t.rows.is_empty()) {
        table(&mut out, t);
    }
    table(&mut out, &tables::means(r));
    table(&mut out, &tables::verdicts(r));
    // A chart per measure, side by side where the page is wide enough.
    let _ = writeln!(out, "<div class=\"charts\">");
    for m in &r.measures {
        let _ = writeln!(out, "<div class=\"chart\">{}</div>", charts::means_with_ci(m)?);
    }
    let _ = writeln!(out, "</div>\n<div class=\"chart\">{}</div>", charts::over_time(r)?);
    table(&mut out, &tables::per_run(r));
    if r.variants.iter().any(|v| !v.per_instance.is_empty()) {
        table(&mut out, &tables::instances(r));
    }
    for t in super::cipher::study_tables(r) {
        table(&mut out, &t);
    }
    let _ = writeln!(out, "<div class=\"chart\">{}</div>", charts::latency(r)?);
    table(&mut out, &tables::latency(r));
    table(&mut out, &tables::machine(r));
    table(&mut out, &tables::disks(r));
    table(&mut out, &tables::canary(r));
    table(&mut out, &tables::sut(r));
    let _ = writeln!(out, "<h2>Study file</h2>\n<pre>{}</pre>\n</body></html>", esc(&r.sut.study_file));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn is_self_contained_with_four_charts_after_the_answer() {
        let html = super::render(&super::super::sample::report()).unwrap();
        assert_eq!(html.matches("<svg").count(), 4);
        let (answer, forest) = (html.find("<h2>Answer</h2>").unwrap(), html.find("<svg").unwrap());
        assert!(answer < forest && forest < html.find("<table").unwrap(), "the answer and its chart come first");
        // The only URL is the SVG namespace; nothing is fetched.
        assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
        assert!(html.contains("slower by"));
    }
}
