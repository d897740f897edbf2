//! The study file's text: where its entries stand (so an error names the line), and parser
//! errors as one line.

use serde::Deserialize;

/// A TOML parser error as one line: the file, the line its span starts on, the message.
pub fn syntax_error(file: &dyn std::fmt::Display, text: &str, e: &toml::de::Error) -> anyhow::Error {
    let span = e.span().map_or(0..0, |s| s.start.min(text.len())..s.end.min(text.len()));
    // A workload's own options are read after its table, whose span the error carries:
    // an unknown key is looked up inside it.
    let unknown = e.message().strip_prefix("unknown field `").and_then(|m| m.split('`').next());
    let at = unknown
        .and_then(|key| {
            let mut offset = span.start;
            text[span.clone()].split_inclusive('\n').find_map(|l| {
                let here = offset;
                offset += l.len();
                l.trim_start().strip_prefix(key).filter(|r| r.trim_start().starts_with('=')).map(|_| here)
            })
        })
        .unwrap_or(span.start);
    let line = e.span().map_or(0, |_| text[..at].matches('\n').count() + 1);
    let msg: Vec<&str> = e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    anyhow::anyhow!("{file} line {line}: {}", msg.join("; "))
}

/// Where the entries of a study file stand in its text, from the TOML parser's spans, so
/// an error in the second `[[workloads]]` entry points at that entry's lines.
pub(super) struct Places<'a> {
    text: &'a str,
    /// The study's own `name`.
    pub name: Option<std::ops::Range<usize>>,
    pub workloads: Vec<std::ops::Range<usize>>,
    pub variants: Vec<std::ops::Range<usize>>,
}

impl<'a> Places<'a> {
    pub fn of(text: &'a str) -> Self {
        #[derive(Deserialize, Default)]
        struct Spans {
            #[serde(default)]
            name: Option<toml::Spanned<toml::Value>>,
            #[serde(default)]
            workload: Option<toml::Spanned<toml::Value>>,
            #[serde(default)]
            workloads: Vec<toml::Spanned<toml::Value>>,
            #[serde(default)]
            variants: Vec<toml::Spanned<toml::Value>>,
        }
        let spans: Spans = toml::from_str(text).unwrap_or_default();
        let workloads = spans.workload.into_iter().chain(spans.workloads).map(|w| w.span()).collect();
        let variants = spans.variants.iter().map(|v| v.span()).collect();
        Places { text, name: spans.name.map(|n| n.span()), workloads, variants }
    }

    /// `line N: ` for the first line holding `needle` within `within` (the whole file when
    /// `None`), else the entry's first line; empty when nothing is found.
    pub fn line(&self, within: Option<&std::ops::Range<usize>>, needle: &str) -> String {
        let range = within.cloned().unwrap_or(0..self.text.len());
        let start = self.text[..range.start].matches('\n').count();
        let found = self.text[range.clone()].lines().position(|l| l.contains(needle));
        match (found, within) {
            (Some(i), _) => format!("line {}: ", start + i + 1),
            (None, Some(_)) => format!("line {}: ", start + 1),
            (None, None) => String::new(),
        }
    }
}
