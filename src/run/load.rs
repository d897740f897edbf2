//! How much load a run puts on its database, and for how long: one set of keys, meanings and
//! defaults for the command line (`dbvs run --threads 4`), a study or capacity file's
//! workload entry (`threads = 4`) and the run spec a child reads.

use crate::sys::units::{duration_text, optional_duration_text, parse_duration};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The measured window when neither `duration` nor `iterations` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// The warm-up of a timed run when `warmup` is not given.
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(5);
/// The longest measured window or warm-up a run may ask for.
pub const LONGEST: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct Load {
    /// Worker threads (virtual users), each with its own connection.
    #[arg(long, visible_alias = "users", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    #[serde(default = "one")]
    pub threads: u32,
    /// Measured time after warmup (e.g. 60s, 10m) [default: 30s; with iterations, no limit].
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(default, with = "optional_duration_text")]
    pub duration: Option<Duration>,
    /// Time before measuring (HammerDB's rampup); statistics are reset when it ends
    /// [default: 5s; with iterations, none].
    #[arg(long, visible_alias = "rampup", value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(default, with = "optional_duration_text")]
    pub warmup: Option<Duration>,
    /// Units each thread runs, then stops (HammerDB's per-user iterations, e.g. 1000); the run
    /// ends when all are done. Counts from the first unit, so it takes no warmup.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    #[serde(default)]
    pub iterations: Option<u64>,
    /// Mean think time after each unit; each pause is uniform in [0, 2 x think time).
    #[arg(long, default_value = "0", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "random_sleep")]
    #[serde(default, with = "duration_text")]
    pub think_time: Duration,
    /// A random sleep of up to this long after each unit (HammerDB-style, e.g. 10ms): the
    /// same as a think time of half of it.
    #[arg(long, value_name = "MAX", value_parser = parse_duration, allow_hyphen_values = true)]
    #[serde(default, with = "optional_duration_text")]
    pub random_sleep: Option<Duration>,
    /// Threads started per second during ramp-up (DS2's ramp_rate).
    #[arg(long, default_value_t = 10.0)]
    #[serde(default = "default_ramp_rate")]
    pub ramp_rate: f64,
    /// With several instances, each starts this long after the one before (seed 000's
    /// clients started 15 s apart); each is measured over its own window.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    #[serde(default, with = "duration_text")]
    pub stagger: Duration,
}

impl Default for Load {
    fn default() -> Self {
        Self {
            threads: 1,
            duration: None,
            warmup: None,
            iterations: None,
            think_time: Duration::ZERO,
            random_sleep: None,
            ramp_rate: default_ramp_rate(),
            stagger: Duration::ZERO,
        }
    }
}

impl Load {
    /// The measured window: as given, else unbounded with `iterations`, else the default.
    pub fn window(&self) -> Duration {
        match (self.duration, self.iterations) {
            (Some(d), _) => d,
            (None, Some(_)) => Duration::from_secs(365 * 24 * 3600),
            (None, None) => DEFAULT_DURATION,
        }
    }

    /// The warm-up: as given, else none with `iterations`, else the default.
    pub fn warmup(&self) -> Duration {
        match (self.warmup, self.iterations) {
            (Some(w), _) => w,
            (None, Some(_)) => Duration::ZERO,
            (None, None) => DEFAULT_WARMUP,
        }
    }

    /// The mean pause after each unit.
    pub fn think(&self) -> Duration {
        self.random_sleep.map_or(self.think_time, |max| max / 2)
    }

    /// What is wrong with these keys, if anything: the key and what it must be, for the
    /// caller to name as its user wrote it (`--threads`, `workload.threads` on line 7).
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !(1..=1024).contains(&self.threads) {
            return Some(("threads", "must be between 1 and 1024"));
        }
        if self.iterations == Some(0) {
            return Some(("iterations", "must be at least 1"));
        }
        if self.iterations.is_some() && self.warmup.is_some_and(|w| !w.is_zero()) {
            return Some(("warmup", "is not taken with iterations, which count from the first unit; drop it, or give a duration instead of iterations"));
        }
        if self.duration.is_some_and(|d| d.is_zero() || d > LONGEST) {
            return Some(("duration", "must be longer than 0 and at most 24h, e.g. 60s"));
        }
        if self.warmup.is_some_and(|w| w > LONGEST) {
            return Some(("warmup", "must be at most 24h"));
        }
        if !(self.ramp_rate > 0.0 && self.ramp_rate.is_finite()) {
            return Some(("ramp_rate", "must be a positive number of threads per second, e.g. 10"));
        }
        None
    }
}

fn one() -> u32 {
    1
}

fn default_ramp_rate() -> f64 {
    10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_reads_back_as_itself_from_json_and_toml() {
        let load = Load {
            threads: 4,
            duration: Some(Duration::from_millis(1500)),
            warmup: Some(Duration::from_secs(2)),
            think_time: Duration::from_millis(10),
            stagger: Duration::from_secs(15),
            ..Load::default()
        };
        let json = serde_json::to_string(&load).unwrap();
        assert_eq!(serde_json::from_str::<Load>(&json).unwrap(), load, "{json}");
        let toml: Load = toml::from_str(
            "threads = 4\nduration = \"1.5s\"\nwarmup = \"2s\"\nthink_time = \"10ms\"\nstagger = \"15s\"",
        )
        .unwrap();
        assert_eq!(toml, load);
    }

    #[test]
    fn defaults_are_one_set_wherever_a_load_is_read() {
        let none: Load = toml::from_str("").unwrap();
        assert_eq!(none, Load::default());
        assert_eq!((none.window(), none.warmup()), (DEFAULT_DURATION, DEFAULT_WARMUP));
        let counted = Load { iterations: Some(5), ..Load::default() };
        assert_eq!(counted.warmup(), Duration::ZERO);
        assert!(counted.window() > LONGEST);
    }

    #[test]
    fn each_bad_key_is_named() {
        let bad = |load: Load| load.problem().map(|(key, _)| key);
        assert_eq!(bad(Load { threads: 0, ..Load::default() }), Some("threads"));
        assert_eq!(bad(Load { iterations: Some(0), ..Load::default() }), Some("iterations"));
        let counted = Load { iterations: Some(5), warmup: Some(Duration::from_secs(1)), ..Load::default() };
        assert_eq!(bad(counted), Some("warmup"));
        assert_eq!(bad(Load { duration: Some(Duration::ZERO), ..Load::default() }), Some("duration"));
        assert_eq!(bad(Load { ramp_rate: f64::NAN, ..Load::default() }), Some("ramp_rate"));
        assert_eq!(bad(Load::default()), None);
    }
}
