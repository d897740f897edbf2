//! Inline SVG charts, drawn with plotters so reports need no network or script.

use super::{MeasureReport, StudyReport};
use anyhow::Result;
use plotters::prelude::*;

pub(crate) const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e:?}")
}

/// One measure's mean per variant with its CI as whiskers (every measure gets one: a
/// statement's latency, a benchmark's time, CPU per unit, power).
pub fn means_with_ci(m: &MeasureReport) -> Result<String> {
    let ran: Vec<(&String, &crate::stats::Summary)> = m.summaries.iter().map(|(n, s)| (n, s)).collect();
    let unit = if m.measure.unit.is_empty() { String::new() } else { format!(" ({})", m.measure.unit) };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (480, 280)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let top = ran.iter().map(|(_, s)| s.ci.1).fold(0.0, f64::max) * 1.15;
        let top = if top > 0.0 { top } else { 1.0 };
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{}{unit}: mean, 95% CI", m.measure.key()), ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d((0..ran.len().saturating_sub(1)).into_segmented(), 0.0..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => ran.get(*i).map_or(String::new(), |(n, _)| n.to_string()),
                _ => String::new(),
            })
            .y_label_formatter(&|y| super::tables::number(*y))
            .draw()
            .map_err(err)?;
        for (i, (_, s)) in ran.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), s.mean)],
                    c.mix(0.6).filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(ErrorBar::new_vertical(
                    SegmentValue::CenterOf(i),
                    s.ci.0,
                    s.mean,
                    s.ci.1,
                    BLACK.stroke_width(2),
                    12,
                )))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The forest plot's axis: linear within a few times the threshold, logarithmic beyond, so
/// a 1% change stays visible beside an 80% one (`asinh`, in units of `scale` percent).
struct Stretched {
    scale: f64,
}

impl Stretched {
    fn at(&self, change_pct: f64) -> f64 {
        (change_pct / self.scale).asinh()
    }

    fn label(&self, x: f64) -> String {
        let pct = self.scale * x.sinh();
        match pct.abs() {
            p if p < 0.05 => "0%".into(),
            p if p < 10.0 => format!("{pct:+.1}%"),
            _ => format!("{pct:+.0}%"),
        }
    }
}

/// The forest plot: every comparison's change % with its CI as a horizontal whisker, the
/// practical threshold as a shaded band around no change, on a [`Stretched`] axis.
pub fn forest(r: &StudyReport) -> Result<String> {
    let rows = super::answer::rows(r);
    let band = 100.0 * r.rules.threshold;
    let axis = Stretched { scale: band.max(0.5) };
    let lo = rows.iter().map(|x| axis.at(x.ci.0)).fold(axis.at(-band), f64::min);
    let hi = rows.iter().map(|x| axis.at(x.ci.1)).fold(axis.at(band), f64::max);
    let pad = (hi - lo) * 0.08;
    let n = rows.len().max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 90 + 26 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let label_width = rows.iter().map(|x| x.label.len()).max().unwrap_or(10).clamp(10, 48) as u32 * 7;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("change vs baseline, controls and pairs, 95% CI; band: +-{band:.1}% threshold; axis stretched near 0"),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(label_width)
            .build_cartesian_2d(lo - pad..hi + pad, (0..n - 1).into_segmented())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|y| match y {
                SegmentValue::CenterOf(i) => rows.get(n - 1 - *i).map_or(String::new(), |x| x.label.clone()),
                _ => String::new(),
            })
            .x_label_formatter(&|x| axis.label(*x))
            .x_desc("change of the measure, %")
            .draw()
            .map_err(err)?;
        let (top, bottom) = (|| SegmentValue::Exact(n), || SegmentValue::Exact(0));
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(axis.at(-band), bottom()), (axis.at(band), top())],
                BLACK.mix(0.08).filled(),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(0.0, bottom()), (0.0, top())], BLACK)))
            .map_err(err)?;
        for (i, row) in rows.iter().enumerate() {
            let y = || SegmentValue::CenterOf(n - 1 - i);
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(std::iter::once(ErrorBar::new_horizontal(
                    y(),
                    axis.at(row.ci.0),
                    axis.at(row.change),
                    axis.at(row.ci.1),
                    c.stroke_width(2),
                    10,
                )))
                .map_err(err)?;
            chart.draw_series(std::iter::once(Circle::new((axis.at(row.change), y()), 4, c.filled()))).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The metric over time within runs, averaged over each variant's runs.
pub fn over_time(r: &StudyReport) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let pts = r.variants.iter().flat_map(|v| v.series.iter());
        let (xmax, ymax) = pts.fold((1.0f64, 1.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{} over time (per interval, mean of runs)", r.metric.to_uppercase()), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..xmax * 1.02, 0.0..ymax * 1.1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds into the measured window")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .y_desc(r.metric.to_uppercase())
            .draw()
            .map_err(err)?;
        for (i, v) in r.variants.iter().filter(|v| !v.series.is_empty()).enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(v.series.iter().copied(), c.stroke_width(2)))
                .map_err(err)?
                .label(v.info.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        }
        chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Latency per operation and variant: p50 to p99 as a whisker, p95 as the point.
pub fn latency(r: &StudyReport) -> Result<String> {
    let ops: Vec<String> = r
        .variants
        .iter()
        .flat_map(|v| v.latency.keys().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let ran: Vec<_> = r.variants.iter().filter(|v| !v.latency.is_empty()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let ymax = ran.iter().flat_map(|v| v.latency.values()).map(|l| l.p99_ms).fold(0.01, f64::max) * 1.15;
        let slots = ops.len() * (ran.len() + 1);
        let mut chart = ChartBuilder::on(&root)
            .caption("latency per operation: p50-p99 whisker, p95 point (ms)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0..slots.max(1), 0.0..ymax)
            .map_err(err)?;
        let width = ran.len() + 1;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(slots.max(1))
            .x_label_formatter(&|x| {
                if x % width == ran.len() / 2 {
                    ops.get(x / width).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("ms")
            .draw()
            .map_err(err)?;
        for (vi, v) in ran.iter().enumerate() {
            let c = PALETTE[vi % PALETTE.len()];
            let bars = ops.iter().enumerate().filter_map(|(oi, op)| {
                v.latency
                    .get(op)
                    .map(|l| ErrorBar::new_vertical(oi * width + vi, l.p50_ms, l.p95_ms, l.p99_ms, c.filled(), 10))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(v.info.name.clone())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
        }
        chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw().map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_the_variant_names() {
        let r = super::super::sample::report();
        let charts =
            [forest(&r).unwrap(), means_with_ci(&r.measures[0]).unwrap(), over_time(&r).unwrap(), latency(&r).unwrap()];
        for svg in charts {
            assert!(svg.starts_with("<svg") && svg.contains("sqlcipher"), "{}", &svg[..200.min(svg.len())]);
        }
    }

    #[test]
    fn a_one_percent_change_keeps_a_visible_share_of_an_axis_that_reaches_eighty() {
        let axis = Stretched { scale: 1.0 };
        let share = axis.at(1.0) / axis.at(80.0);
        assert!(share > 0.15, "1% takes {:.0}% of the way to 80%", 100.0 * share);
        assert!(axis.at(-80.0) < axis.at(-1.0) && axis.at(-1.0) < axis.at(0.0) && axis.at(0.0) == 0.0);
        for pct in [-47.2, -3.1, 0.8, 12.0, 80.0] {
            let back: f64 = axis.label(axis.at(pct)).trim_end_matches('%').parse().unwrap();
            assert!((back - pct).abs() <= 0.5, "{pct} reads back as {back}");
        }
    }
}
