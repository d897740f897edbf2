//! Markdown: the tables, for pasting into tickets and wikis.

use super::{tables, StudyReport};
use std::fmt::Write;

pub fn table(out: &mut String, t: &tables::Table) {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let _ = writeln!(out, "\n## {}\n", t.title);
    let _ = writeln!(out, "| {} |", t.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(t.header.len()));
    for row in &t.rows {
        let _ = writeln!(out, "| {} |", row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
    }
}

pub fn render(r: &StudyReport) -> String {
    let mut out = format!("# Study {}: {}\n\n", r.study_id, r.name);
    let _ = writeln!(out, "- status: {}{}", r.status, r.cause.as_ref().map_or(String::new(), |c| format!(" ({c})")));
    let _ = writeln!(
        out,
        "- {} blocks, {:.0} s per block; stopped: {}",
        r.blocks_completed, r.seconds_per_block, r.stop_reason
    );
    let _ = writeln!(
        out,
        "- metric: {} ({} is better), baseline: {}, CI target: {}",
        r.metric,
        if r.higher_is_better { "higher" } else { "lower" },
        r.baseline,
        r.targets().text()
    );
    let _ = writeln!(out, "- {} to {}", r.started_at, r.finished_at);
    for d in &r.design {
        let _ = writeln!(out, "- design: {}", d.text());
    }
    for t in &r.turn_starts {
        let _ = writeln!(out, "- turn starts: {}", t.text());
    }
    let _ = writeln!(out, "\n## Answer\n");
    for line in super::answer::lines(r) {
        let _ = writeln!(out, "- {line}");
    }
    let mut list = vec![tables::changes(r)];
    list.extend(
        [super::ladder::table(r), tables::controls(r), tables::pairs(r)].into_iter().filter(|t| !t.rows.is_empty()),
    );
    list.push(tables::stacks(r));
    list.extend(Some(tables::settings(r)).filter(|t| !t.rows.is_empty()));
    list.extend([tables::means(r), tables::verdicts(r), tables::per_run(r)]);
    list.extend(super::cipher::study_tables(r));
    list.extend(Some(tables::instances(r)).filter(|t| !t.rows.is_empty()));
    list.extend([tables::latency(r), tables::machine(r), tables::disks(r), tables::canary(r), tables::sut(r)]);
    for t in &list {
        table(&mut out, t);
    }
    let _ = write!(out, "\n## Study file\n\n```toml\n{}\n```\n", r.sut.study_file.trim_end());
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn has_verdict_runs_and_sut() {
        let md = super::render(&super::super::sample::report());
        for s in [
            "## Verdict",
            "## Changes vs baseline",
            "ds2 | OPM | 100 orders/min",
            "slower by",
            // The study asked for the share of the larger side too: plain's OPM.
            "; as a share of the larger: -",
            "of plain's",
            "## Runs",
            "block 6",
            // The median of plain's six runs (98, 99, 100, 100, 101, 102; the lower middle)
            // and of sqlcipher's (88, 89, 90, 90.5, 91, 92) are both block 1's.
            "| block 1 | 100 (median run) | 90.00 (median run) |",
            "change vs baseline",
            "## AES in memory (seed 000's table): aes-256-xts, median of 1 run(s); OpenSSL 3.0.17, 2 thread(s)",
            "| 1 MB | 3000 | 3000 | 3000 | 1000 | 1000 | 1000 |",
            "## System under test",
            "```toml",
            "apt-get install e2fsprogs",
        ] {
            assert!(md.contains(s), "missing {s}:\n{md}");
        }
    }
}
