//! The cipher benchmark's outputs: TrueCrypt-style tables and a self-contained HTML page
//! with the MB/s-by-buffer-size chart.

use super::{html, tables::Table};
use crate::cipher::{Point, Series};
use crate::measure::Measure;
use anyhow::Result;
use plotters::prelude::*;
use serde::Serialize;
use std::fmt::Write;

/// Everything one `dbvs cipher` call measured. Its JSON reads back as a run record
/// (`crate::record::RunRecord`): `status`, `workload`, the headline and measures (the first
/// series' mean MB/s), and `metrics` (its averages over the sizes).
#[derive(Clone, Debug, Serialize)]
pub struct CipherReport {
    pub status: crate::status::Status,
    pub workload: &'static str,
    pub headline: Measure,
    pub measures: Vec<Measure>,
    pub metrics: serde_json::Value,
    pub host: crate::host::HostInfo,
    pub openssl: String,
    pub threads: usize,
    pub runs: usize,
    pub series: Vec<Series>,
    /// Sizes left out because the machine lacks the memory for them.
    pub skipped_sizes: Vec<String>,
}

impl CipherReport {
    /// The report of a measured table on `host`.
    pub fn new(t: crate::cipher::table::AesTable, host: crate::host::HostInfo) -> Self {
        CipherReport {
            status: crate::status::Status::Completed,
            workload: "cipher",
            headline: crate::cipher::throughput(&t.series),
            measures: vec![crate::cipher::throughput(&t.series)],
            metrics: crate::cipher::metrics(&t.series),
            host,
            openssl: t.openssl,
            threads: t.threads,
            runs: t.runs,
            series: t.series,
            skipped_sizes: t.skipped_sizes,
        }
    }
}

/// A study's AES table (`aes_table`), one table per cipher of the medians, for its report.
pub fn study_tables(study: &super::StudyReport) -> Vec<Table> {
    let Some(t) = &study.aes_table else { return vec![] };
    let r = CipherReport::new(t.clone(), study.sut.host.clone());
    ciphers(&r)
        .into_iter()
        .map(|c| {
            let (header, rows) = rows(&r, &c, Of::Median);
            let title = format!(
                "AES in memory (seed 000's table): {}; {}, {} thread(s), MB = 10^6 bytes{}",
                Of::Median.title(&c, r.runs),
                r.openssl,
                r.threads,
                match r.skipped_sizes.is_empty() {
                    true => String::new(),
                    false => format!("; left out for lack of memory: {}", r.skipped_sizes.join(", ")),
                }
            );
            Table { title, header, rows }
        })
        .collect()
}

/// Which figures a table shows: the medians over the runs, or one run's (from 0).
#[derive(Clone, Copy)]
pub enum Of {
    Median,
    Run(usize),
}

impl Of {
    /// Every table of a report: the medians, then each run's when there were several.
    pub fn all(r: &CipherReport) -> Vec<Of> {
        let runs = if r.runs > 1 { r.runs } else { 0 };
        std::iter::once(Of::Median).chain((0..runs).map(Of::Run)).collect()
    }

    pub fn title(self, cipher: &str, runs: usize) -> String {
        match self {
            Of::Median => format!("{cipher}, median of {runs} run(s)"),
            Of::Run(i) => format!("{cipher}, run {}", i + 1),
        }
    }

    /// A point's encrypt, decrypt and mean MB/s (a run's mean as TrueCrypt's: their average).
    fn figures(self, p: &Point) -> [f64; 3] {
        match self {
            Of::Run(i) if i < p.runs.len() => {
                let [e, d] = p.runs[i];
                [e, d, (e + d) / 2.0]
            }
            _ => [p.encrypt_mbs, p.decrypt_mbs, p.mean_mbs],
        }
    }
}

/// Rows of one cipher's table: per size, each AES-NI setting's encrypt/decrypt/mean and,
/// with both settings, the mean's gain from AES-NI. The last row averages the sizes.
pub fn rows(r: &CipherReport, cipher: &str, of: Of) -> (Vec<String>, Vec<Vec<String>>) {
    let series: Vec<&Series> = r.series.iter().filter(|s| s.cipher == cipher).collect();
    let mut header = vec!["buffer".to_string()];
    for s in &series {
        let tag = if s.aesni { "AES-NI" } else { "no AES-NI" };
        header.extend(["encrypt", "decrypt", "mean"].map(|k| format!("{k} MB/s ({tag})")));
    }
    let on = series.iter().find(|s| s.aesni);
    let off = series.iter().find(|s| !s.aesni);
    let both = on.zip(off);
    if both.is_some() {
        header.push("AES-NI gain".into());
    }
    let n = series.first().map_or(0, |s| s.points.len());
    let mut rows: Vec<Vec<String>> = (0..n)
        .map(|i| {
            let mut row = vec![series[0].points[i].label.clone()];
            for s in &series {
                row.extend(of.figures(&s.points[i]).map(|x| format!("{x:.0}")));
            }
            if let Some((on, off)) = both {
                row.push(gain(of.figures(&on.points[i])[2], of.figures(&off.points[i])[2]));
            }
            row
        })
        .collect();
    if n > 0 {
        let avg = |s: &Series, k: usize| s.points.iter().map(|p| of.figures(p)[k]).sum::<f64>() / n as f64;
        let mut row = vec!["average".to_string()];
        for s in &series {
            row.extend([avg(s, 0), avg(s, 1), avg(s, 2)].map(|x| format!("{x:.0}")));
        }
        if let Some((on, off)) = both {
            row.push(gain(avg(on, 2), avg(off, 2)));
        }
        rows.push(row);
    }
    (header, rows)
}

fn gain(on: f64, off: f64) -> String {
    format!("{:+.1}%", 100.0 * (on / off - 1.0))
}

pub fn ciphers(r: &CipherReport) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in &r.series {
        if !v.contains(&s.cipher) {
            v.push(s.cipher.clone());
        }
    }
    v
}

/// Mean MB/s against buffer size, one line per cipher and AES-NI setting. The x axis has one
/// tick per measured size, labelled as in the tables (the sizes are roughly log-spaced, and a
/// log axis would put its ticks at powers of ten of bytes, which no size is).
fn chart(r: &CipherReport) -> Result<String> {
    let err = |e: &dyn std::fmt::Debug| anyhow::anyhow!("drawing the cipher chart: {e:?}");
    let top = r.series.iter().flat_map(|s| s.points.iter().map(|p| p.mean_mbs)).fold(1.0, f64::max) * 1.1;
    let mut sizes: Vec<(usize, &str)> =
        r.series.iter().flat_map(|s| s.points.iter().map(|p| (p.bytes, p.label.as_str()))).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let at = |bytes: usize| sizes.iter().position(|s| s.0 == bytes).unwrap_or(0) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut c = ChartBuilder::on(&root)
            .caption(format!("mean MB/s by buffer size ({} thread(s))", r.threads), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d((0..sizes.len().saturating_sub(1) as u32).into_segmented(), 0.0..top)
            .map_err(|e| err(&e))?;
        c.configure_mesh()
            .x_desc("buffer size")
            .y_desc("MB/s (10^6 bytes)")
            .x_labels(sizes.len())
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => sizes.get(*i as usize).map_or(String::new(), |s| s.1.to_string()),
                _ => String::new(),
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, s) in r.series.iter().enumerate() {
            let color = super::PALETTE[i % super::PALETTE.len()];
            let pts: Vec<(SegmentValue<u32>, f64)> =
                s.points.iter().map(|p| (SegmentValue::CenterOf(at(p.bytes)), p.mean_mbs)).collect();
            let name = format!("{} {}", s.cipher, if s.aesni { "AES-NI" } else { "no AES-NI" });
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
            c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(|e| err(&e))?;
        }
        c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

pub fn html(r: &CipherReport) -> Result<String> {
    let mut out = html::page("dbvs cipher");
    out.push_str("<h1>AES throughput by buffer size</h1>\n");
    let h = &r.host;
    let _ = writeln!(
        out,
        "<p>{} ({} cores, AES-NI {}); {}; {} thread(s); median of {} runs; MB = 10<sup>6</sup> bytes.</p>",
        html::esc(&h.cpu_model),
        h.cores,
        if h.aes_ni { "present" } else { "absent" },
        html::esc(&r.openssl),
        r.threads,
        r.runs
    );
    let _ = writeln!(out, "<div class=\"chart\">{}</div>", chart(r)?);
    for c in ciphers(r) {
        for of in Of::all(r) {
            let (header, rows) = rows(r, &c, of);
            html::table(&mut out, &Table { title: of.title(&c, r.runs), header, rows });
        }
    }
    if !r.skipped_sizes.is_empty() {
        let _ = writeln!(out, "<p>Left out for lack of memory: {}.</p>", html::esc(&r.skipped_sizes.join(", ")));
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cipher::Point;

    fn series(aesni: bool, mbs: f64) -> Series {
        let p = |label: &str, bytes, x: f64| Point {
            label: label.into(),
            bytes,
            encrypt_mbs: x,
            decrypt_mbs: x,
            mean_mbs: x,
            runs: vec![[x, x], [2.0 * x, 2.0 * x]],
        };
        Series {
            cipher: "aes-256-xts".into(),
            aesni,
            threads: 1,
            points: vec![p("100 KB", 102_400, mbs), p("1 MB", 1 << 20, 2.0 * mbs)],
        }
    }

    #[test]
    fn tables_show_the_gain_from_aes_ni_and_an_average() {
        let series_both = vec![series(true, 1000.0), series(false, 250.0)];
        let r = CipherReport {
            status: crate::status::Status::Completed,
            workload: "cipher",
            headline: crate::cipher::throughput(&series_both),
            measures: vec![crate::cipher::throughput(&series_both)],
            metrics: serde_json::Value::Null,
            host: crate::host::collect(),
            openssl: "OpenSSL 3".into(),
            threads: 1,
            runs: 3,
            series: series_both,
            skipped_sizes: vec!["1 GB".into()],
        };
        let (header, rows) = rows(&r, "aes-256-xts", Of::Median);
        assert_eq!(header.len(), 8);
        assert_eq!(rows[0], ["100 KB", "1000", "1000", "1000", "250", "250", "250", "+300.0%"]);
        assert_eq!(rows[2][0], "average");
        let (_, second) = super::rows(&r, "aes-256-xts", Of::Run(1));
        assert_eq!(second[0], ["100 KB", "2000", "2000", "2000", "500", "500", "500", "+300.0%"]);
        assert_eq!(Of::all(&r).len(), 4, "the medians and each of the 3 runs");
        let page = html(&r).unwrap();
        assert!(page.contains("aes-256-xts, run 3"), "every run has its table");
        assert!(page.contains("<svg") && page.contains("+300.0%") && page.contains("lack of memory: 1 GB"));
        assert!(!page.contains("<script"));
    }
}
