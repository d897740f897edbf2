//! The capacity report: per configuration the most instances meeting the SLA, the total and
//! per-instance throughput and CPU there (seed 004's table), every probe, and a chart of
//! total throughput against instances.

use super::{Outcome, Probe, Sla};
use crate::report::{html, markdown, tables::Table};
use anyhow::Result;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::path::Path;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CapacityReport {
    pub name: String,
    /// OPM, TPS or NOPM.
    pub headline: String,
    pub sla: Sla,
    /// How the search stepped, in words.
    #[serde(default)]
    pub search: String,
    pub outcomes: Vec<Outcome>,
    pub wall_s: f64,
    /// When the search ran (RFC 3339) and on what machine, with which dbvs: what a figure
    /// taken from the report into the docs must say (`scripts/results-docs`).
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub finished_at: String,
    #[serde(default)]
    pub env: Option<crate::host::Env>,
    pub file: String,
    /// An upgrade ladder's steps after the first, each with what it changes from the step
    /// before (`layer: its value`); empty unless the file is a ladder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<(String, Vec<String>)>,
}

/// Summarizes one configuration's probes.
pub fn outcome(name: &str, result: Result<Option<u32>>, probes: Vec<Probe>, cap: u32) -> Outcome {
    let (max, error) = match result {
        Ok(m) => (m.unwrap_or(0), None),
        Err(e) => (0, Some(format!("{e:#}"))),
    };
    let at_max: Vec<&Probe> = probes.iter().filter(|p| p.instances == max && p.passed).collect();
    let mean = |f: fn(&Probe) -> Option<f64>| {
        let v: Vec<f64> = at_max.iter().filter_map(|p| f(p)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Outcome {
        configuration: name.into(),
        max_instances: max,
        capped: error.is_none() && max == cap,
        total_at_max: mean(|p| Some(p.total)),
        per_instance_at_max: mean(|p| Some(p.total / p.instances as f64)),
        cpu_busy_pct_at_max: mean(|p| p.cpu_busy_pct),
        net_mbit_s_at_max: mean(|p| p.net_mbit_s.map(|n| n.0)).zip(mean(|p| p.net_mbit_s.map(|n| n.1))),
        probes,
        error,
    }
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.0}"))
}

/// Megabits per second in and out, as "in / out".
fn net(x: Option<(f64, f64)>) -> String {
    x.map_or("-".into(), |(rx, tx)| format!("{rx:.1} / {tx:.1}"))
}

impl CapacityReport {
    fn sla_line(&self) -> String {
        format!(
            "{} >= {} {}{}{}; each verdict confirmed over {} runs",
            self.sla.of.describe(),
            self.sla.min_per_instance,
            self.headline,
            self.sla.max_p95_ms.map_or(String::new(), |p| format!(", p95 <= {p} ms")),
            self.sla.companion_max_p95_ms.map_or(String::new(), |p| format!(", every companion's p95 <= {p} ms")),
            self.sla.confirmations,
        )
    }

    /// Seed 004's table: per configuration, the most instances meeting the SLA and what they
    /// delivered there; on a ladder, what each step changed and did to the instances held.
    pub fn summary(&self) -> Table {
        let h = &self.headline;
        let mut rows: Vec<Vec<String>> = self
            .outcomes
            .iter()
            .map(|c| {
                let max = match (&c.error, c.capped) {
                    (Some(e), _) => format!("error: {e}"),
                    (None, true) => format!("{} (the search's cap)", c.max_instances),
                    (None, false) => c.max_instances.to_string(),
                };
                vec![
                    c.configuration.clone(),
                    max,
                    fmt(c.total_at_max),
                    fmt(c.per_instance_at_max),
                    c.cpu_busy_pct_at_max.map_or("-".into(), |v| format!("{v:.1}")),
                    net(c.net_mbit_s_at_max),
                ]
            })
            .collect();
        let mut header: Vec<String> = [
            "configuration",
            "max instances",
            &format!("total {h}"),
            &format!("{h} per instance"),
            "CPU busy %",
            "network Mbit/s in / out",
        ]
        .map(String::from)
        .to_vec();
        if !self.ladder.is_empty() {
            header.extend(
                ["changes from the step before", "instances vs the step before", "vs the first step"].map(String::from),
            );
            for (row, cells) in rows.iter_mut().zip(self.ladder_cells()) {
                row.extend(cells);
            }
        }
        Table { title: "Capacity per configuration".into(), header, rows }
    }

    /// Each step's changes and its instances held against the step before and the first.
    fn ladder_cells(&self) -> Vec<[String; 3]> {
        let held = |c: &Outcome| c.error.is_none().then_some(c.max_instances);
        let delta = |from: Option<u32>, to: Option<u32>| match (from, to) {
            (Some(a), Some(b)) if a > 0 => {
                format!("{:+} ({:+.0}%)", b as i64 - a as i64, 100.0 * (b as f64 / a as f64 - 1.0))
            }
            (Some(a), Some(b)) => format!("{:+}", b as i64 - a as i64),
            _ => "-".into(),
        };
        let first = self.outcomes.first().and_then(held);
        let mut before: Option<&Outcome> = None;
        let mut cells = vec![];
        for c in &self.outcomes {
            let changes = self.ladder.iter().find(|(step, _)| *step == c.configuration);
            cells.push(match (before, changes) {
                (Some(b), Some((_, changes))) => [changes.join("; "), delta(held(b), held(c)), delta(first, held(c))],
                _ => ["the first step".into(), "-".into(), "-".into()],
            });
            before = Some(c);
        }
        cells
    }

    /// Every probe in search order, with each instance's figure so a near miss is visible.
    pub fn probes(&self) -> Table {
        let rows = self
            .outcomes
            .iter()
            .flat_map(|c| c.probes.iter().map(move |p| (c, p)))
            .map(|(c, p)| {
                let per: Vec<String> = p.per_instance.iter().map(|v| format!("{v:.0}")).collect();
                vec![
                    c.configuration.clone(),
                    p.instances.to_string(),
                    p.reason.as_ref().map_or("pass".into(), |r| format!("fail: {r}")),
                    format!("{:.0}", p.total),
                    per.join(", "),
                    format!("{:.1}", p.p95_max_ms),
                    p.companion_p95_max_ms.map_or("-".into(), |v| format!("{v:.1}")),
                    p.cpu_busy_pct.map_or("-".into(), |v| format!("{v:.1}")),
                    net(p.net_mbit_s),
                    p.client_cpu_pct_max.map_or("-".into(), |v| format!("{v:.1}")),
                ]
            })
            .collect();
        Table {
            title: "Probes".into(),
            header: [
                "configuration",
                "instances",
                "verdict",
                "total",
                "per instance",
                "p95 ms",
                "companion p95 ms",
                "CPU %",
                "Mbit/s in / out",
                "busiest client CPU %",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        }
    }

    pub fn markdown(&self) -> String {
        let mut o = format!(
            "# Capacity: {}\n\n- SLA: {}\n- search: {}\n- search took {:.0} s ({} to {})\n",
            self.name,
            self.sla_line(),
            self.search,
            self.wall_s,
            self.started_at,
            self.finished_at
        );
        for t in [self.summary(), self.probes()] {
            markdown::table(&mut o, &t);
        }
        let _ = write!(o, "\n## Capacity file\n\n```toml\n{}\n```\n", self.file.trim_end());
        o
    }

    pub fn html(&self) -> Result<String> {
        let mut o = html::page(&format!("dbvs capacity: {}", self.name));
        let _ = writeln!(
            o,
            "<h1>Capacity: {}</h1>\n<p>SLA: {}. Search: {}; it took {:.0} s.</p>",
            html::esc(&self.name),
            html::esc(&self.sla_line()),
            html::esc(&self.search),
            self.wall_s
        );
        html::table(&mut o, &self.summary());
        let _ = writeln!(o, "<div class=\"chart\">{}</div>", self.chart()?);
        html::table(&mut o, &self.probes());
        let _ = writeln!(o, "<h2>Capacity file</h2>\n<pre>{}</pre>\n</body></html>", html::esc(&self.file));
        Ok(o)
    }

    /// Total throughput against instances, one line per configuration (mean of its probes).
    pub fn chart(&self) -> Result<String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
            root.fill(&WHITE)?;
            let xmax = self.outcomes.iter().flat_map(|c| c.probes.iter().map(|p| p.instances)).max().unwrap_or(1);
            let sla = self.sla.min_per_instance;
            let ymax = self.outcomes.iter().flat_map(|c| c.probes.iter().map(|p| p.total)).fold(sla, f64::max) * 1.1;
            let mut chart = ChartBuilder::on(&root)
                .caption(format!("Total {} by instances", self.headline), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(70)
                .build_cartesian_2d(0u32..xmax + 1, 0.0..ymax)?;
            chart
                .configure_mesh()
                .x_desc("instances")
                .y_desc(format!("total {}", self.headline))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw()?;
            // Every instance exactly at the SLA: a total below this line cannot pass. Drawn
            // only as far as the plot reaches: plotters pins higher points to the top edge.
            chart
                .draw_series(DashedLineSeries::new(
                    (1..=xmax).map(|n| (n, sla * n as f64)).take_while(|p| p.1 <= ymax),
                    6,
                    4,
                    BLACK.mix(0.5).stroke_width(1),
                ))?
                .label(format!("SLA x instances ({sla:.0} each)"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.5)));
            for (i, c) in self.outcomes.iter().enumerate() {
                let color = crate::report::PALETTE[i % crate::report::PALETTE.len()];
                let mut points: Vec<(u32, f64)> = Vec::new();
                let mut ns: Vec<u32> = c.probes.iter().map(|p| p.instances).collect();
                ns.sort_unstable();
                ns.dedup();
                for n in ns {
                    let at: Vec<f64> = c.probes.iter().filter(|p| p.instances == n).map(|p| p.total).collect();
                    points.push((n, at.iter().sum::<f64>() / at.len() as f64));
                }
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                    .label(c.configuration.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
                chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
            root.present()?;
        }
        Ok(svg)
    }

    pub fn write_all(&self, dir: &Path) -> Result<()> {
        std::fs::write(dir.join("capacity.md"), self.markdown())?;
        std::fs::write(dir.join("capacity.json"), serde_json::to_string_pretty(self)?)?;
        std::fs::write(dir.join("capacity.html"), self.html()?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(instances: u32, each: f64, sla: f64) -> Probe {
        let passed = each >= sla;
        Probe {
            instances,
            passed,
            reason: (!passed).then(|| format!("an instance reached {each:.0} < {sla:.0}")),
            total: each * instances as f64,
            per_instance: vec![each; instances as usize],
            p95_max_ms: 5.0,
            cpu_busy_pct: Some(40.0 * instances as f64),
            net_mbit_s: Some((2.0 * instances as f64, 1.5 * instances as f64)),
            companion_p95_max_ms: None,
            client_cpu_pct_max: None,
        }
    }

    fn sample() -> CapacityReport {
        let sla = 100.0;
        // Probes up to 16 instances put the SLA line (1,600) far above the data (<= 1,000).
        let probes = vec![probe(1, 300.0, sla), probe(2, 250.0, sla), probe(4, 120.0, sla), probe(16, 40.0, sla)];
        CapacityReport {
            name: "ladder".into(),
            headline: "OPM".into(),
            sla: Sla {
                min_per_instance: sla,
                of: Default::default(),
                max_p95_ms: Some(50.0),
                companion_max_p95_ms: None,
                confirmations: 1,
            },
            search: "doubling, then bisection, up to 16".into(),
            outcomes: vec![
                outcome("small", Ok(Some(4)), probes, 16),
                outcome("broken", Err(anyhow::anyhow!("gocryptfs not found")), vec![], 16),
            ],
            wall_s: 12.0,
            started_at: "2026-11-29T07:00:00Z".into(),
            finished_at: "2026-11-29T07:00:12Z".into(),
            env: None,
            file: "name = \"ladder\" # <x>".into(),
            ladder: vec![],
        }
    }

    #[test]
    fn a_ladder_s_steps_say_what_they_changed_and_held() {
        let mut r = sample();
        let mut bigger = r.outcomes[0].clone();
        (bigger.configuration, bigger.max_instances) = ("+ cores".into(), 6);
        r.outcomes = vec![r.outcomes[0].clone(), bigger];
        r.ladder = vec![("+ cores".into(), vec!["limits: none".into()])];
        let t = r.summary();
        assert_eq!(t.header.len(), 9);
        assert_eq!(t.rows[0][6..], ["the first step", "-", "-"]);
        assert_eq!(t.rows[1][6..], ["limits: none", "+2 (+50%)", "+2 (+50%)"]);
    }

    #[test]
    fn summary_is_taken_at_the_most_passing_instances() {
        let t = sample().summary();
        assert_eq!(t.rows[0], ["small", "4", "480", "120", "160.0", "8.0 / 6.0"]);
        assert_eq!(t.rows[1][1], "error: gocryptfs not found");
        assert_eq!(sample().probes().rows[3][2], "fail: an instance reached 40 < 100");
    }

    #[test]
    fn html_has_real_tables_a_chart_and_no_outside_references() {
        let page = sample().html().unwrap();
        assert_eq!(page.matches("<table>").count(), 2, "{page}");
        assert_eq!(page.matches("<svg").count(), 1);
        assert!(page.contains("&lt;x&gt;") && !page.contains("<x>"), "the capacity file is escaped");
        assert!(!page.contains("<script") && !page.contains("src=") && !page.contains("href="));
        assert!(sample().markdown().contains("| small | 4 | 480 | 120 | 160.0 |"));
    }

    #[test]
    fn the_sla_line_stops_inside_the_plot() {
        // Probes reach 16 instances, whose SLA total (1,600) is far above the largest total
        // (1,000). Plotters pins such points to the plot's top edge, so an unclipped SLA line
        // would run along the top border as if it were data.
        let svg = sample().chart().unwrap();
        assert!(svg.contains("SLA x instances (100 each)"));
        let attr = |tag: &str, name: &str| -> Option<String> {
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(tag[at..].split('"').next()?.to_string())
        };
        let tags: Vec<&str> = svg.split('<').collect();
        let top = tags
            .iter()
            .filter(|t| t.starts_with("line "))
            .filter_map(|t| attr(t, "y2")?.parse::<f64>().ok())
            .fold(f64::MAX, f64::min);
        let dashes: Vec<Vec<f64>> = tags
            .iter()
            .filter(|t| t.starts_with("polyline ") && attr(t, "opacity").as_deref() == Some("0.5"))
            .map(|t| attr(t, "points").unwrap().split([' ', ',']).filter_map(|v| v.parse().ok()).collect())
            .collect();
        assert!(dashes.len() > 5, "{svg}");
        for d in dashes {
            assert!(
                d.iter().skip(1).step_by(2).any(|&y| y > top),
                "an SLA dash lies on the plot's top edge {top}: {d:?}"
            );
        }
    }
}
