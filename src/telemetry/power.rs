//! Power sources, each read once per sample. Nothing is ever estimated: with no source the
//! record says so and reports carry "power: unavailable".
//!
//! - `rapl`: the powercap package counters (`energy_uj`, CPU package and DRAM where the
//!   platform counts them; not the wall), differenced over the interval, with wraparound
//!   at `max_energy_range_uj`.
//! - `ipmi`: `ipmitool dcmi power reading`, the server's AC input as the BMC reports it.
//! - `cmd:COMMAND`: a command that prints watts (an external meter, as the seeds used).

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Which source to use, as `--power` names it (and as run specs carry it).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PowerSpec {
    /// RAPL when this machine exposes it, else none.
    Auto,
    None,
    Rapl,
    Ipmi,
    Command(String),
}

impl std::str::FromStr for PowerSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => PowerSpec::Auto,
            "none" => PowerSpec::None,
            "rapl" => PowerSpec::Rapl,
            "ipmi" => PowerSpec::Ipmi,
            _ => match s.strip_prefix("cmd:") {
                Some(c) if !c.trim().is_empty() => PowerSpec::Command(c.to_string()),
                _ => return Err(format!("unknown power source '{s}': use auto, none, rapl, ipmi or cmd:COMMAND")),
            },
        })
    }
}

impl TryFrom<String> for PowerSpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<PowerSpec> for String {
    fn from(p: PowerSpec) -> String {
        match p {
            PowerSpec::Auto => "auto".into(),
            PowerSpec::None => "none".into(),
            PowerSpec::Rapl => "rapl".into(),
            PowerSpec::Ipmi => "ipmi".into(),
            PowerSpec::Command(c) => format!("cmd:{c}"),
        }
    }
}

/// A source being read.
pub enum Source {
    Rapl { zones: Vec<(PathBuf, u64)>, last: Option<(Instant, Vec<u64>)> },
    Ipmi(PathBuf),
    Command(String),
}

/// The RAPL package zones (intel-rapl:N, not their sub-zones), with their wrap points.
fn rapl_zones() -> Vec<(PathBuf, u64)> {
    let Ok(dir) = std::fs::read_dir("/sys/class/powercap") else { return vec![] };
    let mut zones: Vec<(PathBuf, u64)> = dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.matches(':').count() == 1))
        .filter_map(|p| {
            let max = std::fs::read_to_string(p.join("max_energy_range_uj")).ok()?.trim().parse().ok()?;
            std::fs::read_to_string(p.join("energy_uj")).ok()?;
            Some((p.join("energy_uj"), max))
        })
        .collect();
    zones.sort();
    zones
}

/// Energy used between two counter readings, across one wrap.
pub fn energy_delta(before: u64, after: u64, wrap: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        wrap - before + after
    }
}

/// The first number in a command's output, e.g. "231.5 W" or "Power: 231".
pub fn parse_watts(text: &str) -> Option<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|t| !t.is_empty() && t.chars().any(|c| c.is_ascii_digit()))
        .and_then(|t| t.parse().ok())
}

fn ipmi_watts(text: &str) -> Option<f64> {
    text.lines().find(|l| l.contains("Instantaneous power reading")).and_then(|l| parse_watts(l.split(':').nth(1)?))
}

impl Source {
    /// Opens the source the spec names; `None` when there is none to read.
    pub fn open(spec: &PowerSpec) -> Result<Option<Source>> {
        Ok(match spec {
            PowerSpec::None => None,
            PowerSpec::Auto => Some(Source::Rapl { zones: rapl_zones(), last: None })
                .filter(|s| matches!(s, Source::Rapl { zones, .. } if !zones.is_empty())),
            PowerSpec::Rapl => {
                let zones = rapl_zones();
                if zones.is_empty() {
                    bail!("no readable RAPL counters in /sys/class/powercap (needs root and a CPU/kernel with powercap RAPL); use --power cmd:COMMAND or none");
                }
                Some(Source::Rapl { zones, last: None })
            }
            PowerSpec::Ipmi => {
                let tool = crate::sys::require("ipmitool", "ipmitool")?;
                let mut s = Source::Ipmi(tool);
                s.read().context(
                    "ipmitool dcmi power reading gave no power reading; does this server have a BMC with DCMI?",
                )?;
                Some(s)
            }
            PowerSpec::Command(c) => {
                let mut s = Source::Command(c.clone());
                s.read().with_context(|| format!("the power command '{c}' must print watts"))?;
                Some(s)
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            Source::Rapl { .. } => "rapl (CPU package and DRAM counters, not wall power)".into(),
            Source::Ipmi(_) => "ipmi (dcmi power reading: server AC input)".into(),
            Source::Command(c) => format!("command: {c}"),
        }
    }

    /// Watts now (RAPL: averaged since the previous reading; `None` on the first).
    pub fn read(&mut self) -> Result<Option<f64>> {
        match self {
            Source::Rapl { zones, last } => {
                let now = Instant::now();
                let values: Vec<u64> = zones
                    .iter()
                    .map(|(p, _)| Ok(std::fs::read_to_string(p)?.trim().parse::<u64>()?))
                    .collect::<Result<_>>()?;
                let watts = last.as_ref().map(|(t, before)| {
                    let uj: u64 =
                        zones.iter().zip(before).zip(&values).map(|(((_, w), b), a)| energy_delta(*b, *a, *w)).sum();
                    uj as f64 / 1e6 / now.duration_since(*t).as_secs_f64().max(1e-3)
                });
                *last = Some((now, values));
                Ok(watts)
            }
            Source::Ipmi(tool) => {
                let out = Command::new(&*tool).args(["dcmi", "power", "reading"]).stdin(Stdio::null()).output()?;
                Ok(Some(
                    ipmi_watts(&String::from_utf8_lossy(&out.stdout))
                        .context("no 'Instantaneous power reading' line")?,
                ))
            }
            Source::Command(c) => {
                let out = Command::new("sh").args(["-c", c]).stdin(Stdio::null()).output()?;
                if !out.status.success() {
                    bail!("power command failed ({})", out.status);
                }
                Ok(Some(parse_watts(&String::from_utf8_lossy(&out.stdout)).context("its output holds no number")?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!("cmd:echo 5".parse::<PowerSpec>().unwrap(), PowerSpec::Command("echo 5".into()));
        assert_eq!("auto".parse::<PowerSpec>().unwrap(), PowerSpec::Auto);
        assert!("cmd:".parse::<PowerSpec>().is_err());
        assert!("meter".parse::<PowerSpec>().unwrap_err().contains("cmd:COMMAND"));
    }

    #[test]
    fn energy_wraps_once() {
        assert_eq!(energy_delta(100, 250, 1000), 150);
        assert_eq!(energy_delta(900, 50, 1000), 150);
    }

    #[test]
    fn watts_come_from_the_first_number() {
        assert_eq!(parse_watts("231.5 W\n"), Some(231.5));
        assert_eq!(parse_watts("Power: 80 watts"), Some(80.0));
        assert_eq!(parse_watts("none"), None);
        let ipmi = "    Instantaneous power reading:                   212 Watts\n    Minimum during sampling period:  100 Watts\n";
        assert_eq!(ipmi_watts(ipmi), Some(212.0));
    }

    #[test]
    fn a_command_source_reads_watts_and_a_bad_one_is_refused() {
        let mut s = Source::open(&PowerSpec::Command("echo 42.5".into())).unwrap().unwrap();
        assert_eq!(s.read().unwrap(), Some(42.5));
        assert!(Source::open(&PowerSpec::Command("echo no".into())).is_err());
        assert!(Source::open(&PowerSpec::Command("exit 3".into())).is_err());
    }
}
