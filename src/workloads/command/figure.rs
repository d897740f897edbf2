//! Where the figure is in a command's output: a regex's first group (or whole match), or a
//! JSON pointer. It is looked for in the output's tail first (a benchmark's summary comes
//! last), else the last one seen as the output passed.

use super::output::{Captured, Scan};
use super::Options;
use anyhow::{bail, Context, Result};

#[derive(Clone)]
pub enum Figure {
    Regex(regex::Regex),
    Json(String),
}

impl Figure {
    pub fn new(o: &Options) -> Result<Self> {
        match (&o.regex, &o.json_pointer) {
            (Some(r), None) => {
                let re = regex::Regex::new(r).map_err(|e| {
                    // The crate draws the error over several lines; an error here is one.
                    let why = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                    anyhow::anyhow!("command: the regex '{r}' is invalid: {why}")
                })?;
                Ok(Figure::Regex(re))
            }
            (None, Some(p)) if p.is_empty() || p.starts_with('/') => Ok(Figure::Json(p.clone())),
            (None, Some(p)) => bail!("command: the JSON pointer '{p}' must start with '/' (e.g. /tps)"),
            (None, None) => {
                bail!("command: say where its figure is: regex = 'tps = ([0-9.]+)' or json_pointer = '/tps'")
            }
            (Some(_), Some(_)) => bail!("command: give regex or json_pointer, not both"),
        }
    }

    /// The last figure in a block of whole lines: the regex's last match, or the pointer's
    /// value in the last JSON line that has one.
    pub fn scan(&self, block: &str) -> Option<String> {
        match self {
            Figure::Regex(re) => re.captures_iter(block).last().map(|caps| group(&caps)),
            Figure::Json(pointer) => block.lines().rev().find_map(|l| {
                let l = l.trim();
                let json = (l.starts_with('{') || l.starts_with('[')).then(|| serde_json::from_str(l).ok())??;
                value_at(&json, pointer)
            }),
        }
    }

    /// [`Figure::scan`] for a reader thread.
    pub fn scanner(&self) -> Scan {
        let figure = self.clone();
        Box::new(move |block| figure.scan(block))
    }

    /// The figure in `out`: the regex's last match in the tail, or the pointer into the
    /// whole output (when the tail is all of it, a document over several lines) or its last
    /// JSON line that has it; else the last one seen as the output passed.
    pub fn find(&self, out: &Captured) -> Result<f64> {
        let text = match self {
            Figure::Regex(re) => self
                .scan(&out.tail)
                .or_else(|| out.found.clone())
                .with_context(|| format!("no match for regex '{re}'"))?,
            Figure::Json(pointer) => {
                let whole = out.complete().then(|| serde_json::from_str(&out.tail).ok()).flatten();
                match whole {
                    Some(json) => {
                        value_at(&json, pointer).with_context(|| format!("no value at JSON pointer '{pointer}'"))?
                    }
                    None => self
                        .scan(&out.tail)
                        .or_else(|| out.found.clone())
                        .with_context(|| format!("no JSON line with a value at JSON pointer '{pointer}'"))?,
                }
            }
        };
        text.trim().replace(',', "").parse().with_context(|| format!("'{text}' is not a number"))
    }
}

/// A match's first group, or the whole match.
fn group(caps: &regex::Captures) -> String {
    caps.get(1).or_else(|| caps.get(0)).map_or("", |m| m.as_str()).to_string()
}

/// The text of the value at `pointer`: a string as it is, a number as written.
fn value_at(json: &serde_json::Value, pointer: &str) -> Option<String> {
    match json.pointer(pointer)? {
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_options as options;

    fn whole(text: &str) -> Captured {
        Captured { tail: text.into(), total: text.len() as u64, found: None }
    }

    #[test]
    fn figures_come_from_the_last_regex_match_or_a_json_pointer() {
        let pgbench = "progress: 1.0 s, 900.5 tps\ntps = 1,234.56 (without initial connection time)\n";
        let f = Figure::new(&options(Some(r"tps = ([0-9.,]+)"), None)).unwrap();
        assert_eq!(f.find(&whole(pgbench)).unwrap(), 1234.56);
        let any = Figure::new(&options(Some(r"[0-9]+\.[0-9]+"), None)).unwrap();
        assert_eq!(any.find(&whole("took 2.5 s")).unwrap(), 2.5);
        let json = Figure::new(&options(None, Some("/results/tps"))).unwrap();
        assert_eq!(json.find(&whole("warming up\n{\"results\": {\"tps\": 812.5}}\n")).unwrap(), 812.5);
        assert_eq!(json.find(&whole("{\"results\": {\"tps\": \"99\"}}")).unwrap(), 99.0);
        assert_eq!(json.find(&whole("{\n \"results\": {\"tps\": 7}\n}")).unwrap(), 7.0, "a document over lines");
        assert!(json.find(&whole("{\"results\": {}}")).unwrap_err().to_string().contains("/results/tps"));
        assert!(f.find(&whole("no summary")).unwrap_err().to_string().contains("no match"));
    }

    #[test]
    fn a_figure_beyond_the_tail_is_the_last_one_seen_as_the_output_passed() {
        let f = Figure::new(&options(Some(r"tps = ([0-9.]+)"), None)).unwrap();
        assert_eq!(f.scan("tps = 1\nnoise\ntps = 2\n").as_deref(), Some("2"));
        let cut = Captured { tail: "noise\n".into(), total: 1 << 30, found: Some("3".into()) };
        assert_eq!(f.find(&cut).unwrap(), 3.0);
        let json = Figure::new(&options(None, Some("/tps"))).unwrap();
        assert_eq!(json.scan("{\"tps\": 4}\n{\"other\": 1}\nnot json\n").as_deref(), Some("4"));
        let none = Captured { found: None, ..cut };
        assert_eq!(json.find(&none).unwrap_err().to_string(), "no JSON line with a value at JSON pointer '/tps'");
    }
}
