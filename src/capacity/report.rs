//! The capacity report: per configuration the most instances meeting the SLA, the total and
//! per-instance throughput and CPU there (seed 004's table), every probe, and a chart of
//! total throughput against instances.

use super::{Outcome, Probe, Sla};
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
    pub outcomes: Vec<Outcome>,
    pub wall_s: f64,
    pub file: String,
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
        probes,
        error,
    }
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.0}"))
}

impl CapacityReport {
    pub fn markdown(&self) -> String {
        let mut o = format!("# Capacity: {}\n\n", self.name);
        let _ = writeln!(
            o,
            "- SLA: every instance >= {} {}{}; each verdict confirmed over {} runs\n- search took {:.0} s\n",
            self.sla.min_per_instance,
            self.headline,
            self.sla.max_p95_ms.map_or(String::new(), |p| format!(", p95 <= {p} ms")),
            self.sla.confirmations,
            self.wall_s
        );
        let _ = writeln!(
            o,
            "| configuration | max instances | total {h} | {h} per instance | CPU busy % |\n|---|---|---|---|---|",
            h = self.headline
        );
        for c in &self.outcomes {
            let max = match (&c.error, c.capped) {
                (Some(e), _) => format!("error: {e}"),
                (None, true) => format!("{} (the search's cap)", c.max_instances),
                (None, false) => c.max_instances.to_string(),
            };
            let _ = writeln!(
                o,
                "| {} | {max} | {} | {} | {} |",
                c.configuration,
                fmt(c.total_at_max),
                fmt(c.per_instance_at_max),
                c.cpu_busy_pct_at_max.map_or("-".into(), |v| format!("{v:.1}"))
            );
        }
        let _ = writeln!(o, "\n## Probes\n\n| configuration | instances | verdict | total | per instance | p95 ms | CPU % |\n|---|---|---|---|---|---|---|");
        for c in &self.outcomes {
            for p in &c.probes {
                let per: Vec<String> = p.per_instance.iter().map(|v| format!("{v:.0}")).collect();
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {:.0} | {} | {:.1} | {} |",
                    c.configuration,
                    p.instances,
                    p.reason.as_ref().map_or("pass".into(), |r| format!("fail: {}", r.replace('|', "/"))),
                    p.total,
                    per.join(", "),
                    p.p95_max_ms,
                    p.cpu_busy_pct.map_or("-".into(), |v| format!("{v:.1}"))
                );
            }
        }
        let _ = write!(o, "\n## Capacity file\n\n```toml\n{}\n```\n", self.file.trim_end());
        o
    }

    /// Total throughput against instances, one line per configuration (mean of its probes).
    pub fn chart(&self) -> Result<String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
            root.fill(&WHITE)?;
            let xmax = self.outcomes.iter().flat_map(|c| c.probes.iter().map(|p| p.instances)).max().unwrap_or(1);
            let ymax = self.outcomes.iter().flat_map(|c| c.probes.iter().map(|p| p.total)).fold(1.0, f64::max);
            let mut chart = ChartBuilder::on(&root)
                .caption(format!("Total {} by instances", self.headline), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(70)
                .build_cartesian_2d(0u32..xmax + 1, 0.0..ymax * 1.1)?;
            chart.configure_mesh().x_desc("instances").y_desc(format!("total {}", self.headline)).draw()?;
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
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
            root.present()?;
        }
        Ok(svg)
    }

    pub fn write_all(&self, dir: &Path) -> Result<()> {
        let md = self.markdown();
        std::fs::write(dir.join("capacity.md"), &md)?;
        std::fs::write(dir.join("capacity.json"), serde_json::to_string_pretty(self)?)?;
        let body: String = md
            .lines()
            .map(|l| l.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"))
            .collect::<Vec<_>>()
            .join("\n");
        let html = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Capacity: {}</title></head><body>\
             <div class=\"chart\">{}</div><pre>{body}</pre></body></html>\n",
            self.name.replace('<', "&lt;"),
            self.chart()?
        );
        std::fs::write(dir.join("capacity.html"), html)?;
        Ok(())
    }
}
