//! Live metrics over HTTP in the OpenMetrics text format (`--metrics-addr`), for
//! Prometheus and Grafana during hour-long runs and studies, as go-tpc's `--metrics-addr`.
//! One endpoint, `GET /metrics`, served from a thread on a plain TCP listener: a
//! scrape is one small request, so no HTTP crate is needed.
//!
//! A study's runs are child processes: each publishes its series to a file of its own
//! ([`Exporter::to_file`]), and the study's endpoint serves them merged with its own
//! ([`Exporter::serve`] with the files' directory), so one scrape shows the study's progress
//! and the runs in progress.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A metric family: its type and help line.
#[derive(Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub kind: &'static str,
    pub help: &'static str,
}

pub const fn gauge(name: &'static str, help: &'static str) -> Family {
    Family { name, kind: "gauge", help }
}

/// The current value of every series, by family name, then by label set.
type Series = BTreeMap<&'static str, (Family, BTreeMap<String, f64>)>;

/// The metrics a process exposes, and the listener that serves them.
#[derive(Clone, Default)]
pub struct Exporter {
    series: Arc<Mutex<Series>>,
    /// Where [`Exporter::publish`] writes the series (a study's child run).
    file: Option<Arc<PublishedFile>>,
    /// Where other processes publish series that a scrape merges in (a study's runs).
    merged: Option<PathBuf>,
}

/// A published file, removed when its exporter goes: a finished run's figures are not live.
struct PublishedFile(PathBuf);

impl Drop for PublishedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Exporter {
    /// Starts serving on `addr` (e.g. 127.0.0.1:9100, or :9100 for every address), with the
    /// series other processes publish in `merged` (see [`Exporter::to_file`]).
    pub fn serve(addr: &str, merged: Option<PathBuf>) -> Result<Self> {
        let bind = if addr.starts_with(':') { format!("0.0.0.0{addr}") } else { addr.to_string() };
        let listener = TcpListener::bind(&bind)
            .with_context(|| format!("cannot listen on {addr} for --metrics-addr; give a free HOST:PORT"))?;
        let exporter = Self { merged, ..Self::default() };
        let shared = exporter.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = shared.answer(stream);
            }
        });
        Ok(exporter)
    }

    /// An exporter that serves nothing itself: [`Exporter::publish`] writes its series to
    /// `path` (a `.prom` file in a directory a serving exporter merges).
    pub fn to_file(path: PathBuf) -> Self {
        Self { file: Some(Arc::new(PublishedFile(path))), ..Self::default() }
    }

    /// Writes the series to this exporter's file, whole (renamed into place, so a scrape
    /// never reads half of it); nothing for a serving exporter. A failure only costs a
    /// scrape's freshness, so it is not an error.
    pub fn publish(&self) {
        if let Some(file) = &self.file {
            let tmp = file.0.with_extension("tmp");
            if std::fs::write(&tmp, self.render_own()).is_ok() {
                let _ = std::fs::rename(&tmp, &file.0);
            }
        }
    }

    /// Sets one series, e.g. `set(UNITS, &[("workload", "ds2")], 1234.0)`.
    pub fn set(&self, family: Family, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        series.entry(family.name).or_insert_with(|| (family, BTreeMap::new())).1.insert(labels.join(","), value);
    }

    /// Every series in the OpenMetrics text format, with those published in the merged
    /// directory.
    pub fn render(&self) -> String {
        let mut families = Families::default();
        families.add(&self.render_own());
        if let Some(dir) = &self.merged {
            for text in published(dir) {
                families.add(&text);
            }
        }
        families.text()
    }

    /// This exporter's own series.
    fn render_own(&self) -> String {
        let series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for (name, (family, values)) in series.iter() {
            out += &format!("# TYPE {name} {}\n# HELP {name} {}\n", family.kind, family.help);
            for (labels, v) in values {
                match labels.is_empty() {
                    true => out += &format!("{name} {v}\n"),
                    false => out += &format!("{name}{{{labels}}} {v}\n"),
                }
            }
        }
        out + "# EOF\n"
    }

    fn answer(&self, mut stream: TcpStream) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
            match stream.read(&mut buf)? {
                0 => break,
                n => request.extend_from_slice(&buf[..n]),
            }
        }
        let line = String::from_utf8_lossy(&request);
        let (status, body) = match line.split_whitespace().take(2).collect::<Vec<_>>()[..] {
            ["GET", path] if path == "/metrics" || path.starts_with("/metrics?") => ("200 OK", self.render()),
            _ => ("404 Not Found", "only GET /metrics is served here\n".to_string()),
        };
        write!(
            stream,
            "HTTP/1.1 {status}\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }
}

/// The texts published in `dir` (`*.prom`), in name order.
fn published(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "prom")).collect())
        .unwrap_or_default();
    files.sort();
    files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect()
}

/// Exposition texts merged by family: each family's header once, then every text's samples
/// of it (processes publishing the same families under different labels).
#[derive(Default)]
struct Families(BTreeMap<String, (Vec<String>, Vec<String>)>);

impl Families {
    fn add(&mut self, text: &str) {
        let mut current = String::new();
        for line in text.lines().filter(|l| !l.is_empty() && *l != "# EOF") {
            let header = line.strip_prefix("# TYPE ").or_else(|| line.strip_prefix("# HELP "));
            if let Some(rest) = header {
                current = rest.split_whitespace().next().unwrap_or_default().to_string();
                let (headers, _) = self.0.entry(current.clone()).or_default();
                if !headers.iter().any(|h| h == line) {
                    headers.push(line.to_string());
                }
            } else {
                self.0.entry(current.clone()).or_default().1.push(line.to_string());
            }
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for (headers, samples) in self.0.values() {
            for line in headers.iter().chain(samples) {
                out += line;
                out.push('\n');
            }
        }
        out + "# EOF\n"
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNITS: Family = gauge("dbvs_test_units", "Units so far.");

    #[test]
    fn a_scrape_gets_every_series_in_the_text_format() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let published = tempfile::tempdir().unwrap();
        let e = Exporter::serve(&addr.to_string(), Some(published.path().to_path_buf())).unwrap();
        e.set(UNITS, &[("variant", "a \"b\"")], 12.0);
        e.set(UNITS, &[("variant", "c")], 3.5);
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
        let body = got.split("\r\n\r\n").nth(1).unwrap();
        assert_eq!(
            body,
            "# TYPE dbvs_test_units gauge\n# HELP dbvs_test_units Units so far.\n\
             dbvs_test_units{variant=\"a \\\"b\\\"\"} 12\ndbvs_test_units{variant=\"c\"} 3.5\n# EOF\n"
        );
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut got = String::new();
        s.read_to_string(&mut got).unwrap();
        assert!(got.starts_with("HTTP/1.1 404"), "{got}");
        let taken = Exporter::serve(&addr.to_string(), None).err().unwrap().to_string();
        assert!(taken.contains("--metrics-addr"), "{taken}");
    }

    #[test]
    fn published_series_merge_into_the_serving_exporters_families_and_go_with_their_run() {
        let dir = tempfile::tempdir().unwrap();
        let serving = Exporter { merged: Some(dir.path().to_path_buf()), ..Exporter::default() };
        serving.set(UNITS, &[("study", "s")], 1.0);
        let runs: Vec<Exporter> =
            ["a", "b"].iter().map(|v| Exporter::to_file(dir.path().join(format!("{v}.prom")))).collect();
        for (run, v) in runs.iter().zip(["a", "b"]) {
            run.set(UNITS, &[("variant", v)], 5.0);
            run.set(gauge("dbvs_test_rate", "Rate."), &[("variant", v)], 2.0);
            run.publish();
        }
        let text = serving.render();
        assert_eq!(text.matches("# TYPE dbvs_test_units gauge").count(), 1, "{text}");
        assert_eq!(text.matches("# TYPE dbvs_test_rate gauge").count(), 1, "{text}");
        for line in
            ["dbvs_test_units{study=\"s\"} 1", "dbvs_test_units{variant=\"a\"} 5", "dbvs_test_rate{variant=\"b\"} 2"]
        {
            assert!(text.contains(line), "{line} missing from {text}");
        }
        assert!(text.ends_with("# EOF\n") && text.matches("# EOF").count() == 1, "{text}");
        drop(runs);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a finished run's file is removed");
        assert!(!serving.render().contains("variant"), "{}", serving.render());
    }
}
