//! The study file's text: where its entries stand (so an error names the line), and parser
//! errors as one line (with the key meant, when a misspelt one is close to it).

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
    let hint = unknown.map_or(String::new(), |key| did_you_mean(text, span.start, key, e.message()));
    anyhow::anyhow!("{file} line {line}: {}{hint}", msg.join("; "))
}

/// `; did you mean `k`?` when a key close to the unknown `key` (in the entry at `at`) is
/// one the entry takes. In a workload entry serde lists the workload's own options only (the
/// keys every workload takes are read first), beside a variant's `kind` the kind's own keys
/// only: the keys every such entry takes are candidates too.
fn did_you_mean(text: &str, at: usize, key: &str, message: &str) -> String {
    let places = Places::of(text);
    let within = |entries: &[std::ops::Range<usize>]| entries.iter().any(|w| w.contains(&at));
    let common = match () {
        _ if within(&places.workloads) => super::file::WorkloadConfig::common_keys(),
        _ if within(&places.variants) => crate::variants::STACK_KEYS.map(String::from).to_vec(),
        _ => vec![],
    };
    let meant = closest(key, expected(message).chain(common.iter().map(String::as_str)));
    meant.map_or(String::new(), |k| format!("; did you mean `{k}`?"))
}

/// The fields a serde unknown-field message lists as expected (the backquoted words after
/// the unknown one: "unknown field `a`, expected one of `b`, `c`").
fn expected(message: &str) -> impl Iterator<Item = &str> {
    message.split('`').skip(1).step_by(2).skip(1)
}

/// The candidate closest to `key`, if it is close enough to be what was meant: at most a
/// third of its letters differ (a letter missing, extra, wrong or two swapped count one).
fn closest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    candidates
        .map(|c| (strsim::damerau_levenshtein(key, c), c))
        .filter(|(d, c)| 3 * d <= key.chars().count().max(c.chars().count()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
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
