//! Live metrics over HTTP in the OpenMetrics text format (`--metrics-addr`), for
//! Prometheus and Grafana during hour-long runs and studies, as go-tpc's `--metrics-addr`.
//! One endpoint, `GET /metrics`, served from a thread on a plain TCP listener: a
//! scrape is one small request, so no HTTP crate is needed.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
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
}

impl Exporter {
    /// Starts serving on `addr` (e.g. 127.0.0.1:9100, or :9100 for every address).
    pub fn serve(addr: &str) -> Result<Self> {
        let bind = if addr.starts_with(':') { format!("0.0.0.0{addr}") } else { addr.to_string() };
        let listener = TcpListener::bind(&bind)
            .with_context(|| format!("cannot listen on {addr} for --metrics-addr; give a free HOST:PORT"))?;
        let exporter = Self::default();
        let shared = exporter.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = shared.answer(stream);
            }
        });
        Ok(exporter)
    }

    /// Sets one series, e.g. `set(UNITS, &[("workload", "ds2")], 1234.0)`.
    pub fn set(&self, family: Family, labels: &[(&str, &str)], value: f64) {
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        series.entry(family.name).or_insert_with(|| (family, BTreeMap::new())).1.insert(labels.join(","), value);
    }

    /// Every series in the OpenMetrics text format.
    pub fn render(&self) -> String {
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
        let e = Exporter::serve(&addr.to_string()).unwrap();
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
        let taken = Exporter::serve(&addr.to_string()).err().unwrap().to_string();
        assert!(taken.contains("--metrics-addr"), "{taken}");
    }
}
