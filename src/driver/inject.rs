//! Test-only slowdowns, so the verdict checks (and their tests) have a change of known size
//! to find: a busy-wait after every unit, or units run and not counted.

use super::stats::UnitRecorder;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// What is added to the work: nothing; a fixed busy-wait after every unit (`"35us"`); or a
/// share more units, run like the others and not counted (`"2%"`, also spelt `"2% more
/// units"`: every 51st unit, a ratio of exactly 1 / 1.02 in throughput and in cost per unit,
/// since the extra units are the same work).
///
/// A share is never a busy-wait of a share of each unit's time: on a loaded VM a spin
/// overran what it asked for (the vCPU descheduled mid-spin) and slowed the work after it,
/// so "50%" cost 80% (issue 40). Extra units cost their share by construction.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum InjectedSlowdown {
    #[default]
    None,
    Fixed(Duration),
    MoreUnits(f64),
}

const MORE_UNITS: &str = "more units";

impl InjectedSlowdown {
    /// The busy-wait after every unit.
    fn after(self) -> Duration {
        match self {
            Self::None | Self::MoreUnits(_) => Duration::ZERO,
            Self::Fixed(d) => d,
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Self::None
    }
}

/// One worker's injected slowdown, unit by unit.
pub(crate) struct Injector {
    slowdown: InjectedSlowdown,
    /// Busy-wait owed beyond what was spun (negative: spun ahead). A spin the vCPU was
    /// descheduled in overruns its length; carrying the overrun makes the spins add up to
    /// exactly one fixed delay per unit, whatever the load.
    spin_owed: f64,
    /// Whether the current unit is an extra, uncounted one.
    extra: bool,
    /// The share of an extra unit owed so far, carried from unit to unit so that 2% makes
    /// exactly one unit in 51 an extra.
    owed: f64,
}

impl Injector {
    pub fn new(slowdown: InjectedSlowdown) -> Self {
        Self { slowdown, spin_owed: 0.0, extra: false, owed: 0.0 }
    }

    /// Busy-waits after a unit for a fixed slowdown, and records the wait as untimed.
    pub fn spin(&mut self, rec: &mut UnitRecorder) {
        let spin = self.slowdown.after();
        if spin.is_zero() {
            return;
        }
        self.spin_owed += spin.as_secs_f64();
        let t = Instant::now();
        while t.elapsed().as_secs_f64() < self.spin_owed {
            std::hint::spin_loop();
        }
        let spun = t.elapsed();
        self.spin_owed -= spun.as_secs_f64();
        rec.untimed(spun);
    }

    /// Whether the unit just run counts; also decides whether the next one is an extra.
    pub fn counts_this_unit(&mut self) -> bool {
        let counted = !self.extra;
        self.extra = false;
        if let (true, InjectedSlowdown::MoreUnits(p)) = (counted, self.slowdown) {
            self.owed += p;
            if self.owed >= 1.0 - 1e-9 {
                (self.owed, self.extra) = (self.owed - 1.0, true);
            }
        }
        counted
    }
}

impl FromStr for InjectedSlowdown {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (text, more_units) = match s.strip_suffix(MORE_UNITS) {
            Some(share) => (share.trim_end(), true),
            None => (s, false),
        };
        if let Some(pct) = text.strip_suffix('%') {
            return match pct.trim().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Ok(Self::MoreUnits(p / 100.0)),
                _ => Err(format!("'{s}' is not a share between 0 and 100%; use e.g. 2%")),
            };
        }
        if more_units {
            return Err(format!("'{s}' needs a share; use e.g. 2% {MORE_UNITS}"));
        }
        let d = crate::sys::units::parse_duration(s).map_err(|e| format!("{e}, or a share such as 2%"))?;
        Ok(if d.is_zero() { Self::None } else { Self::Fixed(d) })
    }
}

impl fmt::Display for InjectedSlowdown {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::None => f.write_str("0s"),
            Self::Fixed(d) => write!(f, "{}", humantime::format_duration(*d)),
            Self::MoreUnits(p) => write!(f, "{}% {MORE_UNITS}", p * 100.0),
        }
    }
}

impl Serialize for InjectedSlowdown {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for InjectedSlowdown {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_a_duration_or_a_share_more_units() {
        let fixed: InjectedSlowdown = "35us".parse().unwrap();
        assert_eq!(fixed.after(), Duration::from_micros(35));
        let share: InjectedSlowdown = "2%".parse().unwrap();
        assert_eq!(share, "2% more units".parse().unwrap(), "a share is always more units");
        assert_eq!(share.after(), Duration::ZERO, "and never a busy-wait");
        assert_eq!("0".parse::<InjectedSlowdown>().unwrap(), InjectedSlowdown::None);
        assert_eq!(share.to_string(), "2% more units", "reports say what was done");
        for text in ["35us", "2%", "2% more units"] {
            let d: InjectedSlowdown = text.parse().unwrap();
            assert_eq!(d.to_string().parse::<InjectedSlowdown>().unwrap(), d, "{text} round-trips");
        }
        for bad in ["0%", "-2%", "150%", "two", "35us more units", "0% more units"] {
            assert!(bad.parse::<InjectedSlowdown>().is_err(), "{bad}");
        }
    }

    #[test]
    fn more_units_makes_one_unit_in_fifty_one_an_uncounted_extra_and_no_busy_wait() {
        let more: InjectedSlowdown = "2% more units".parse().unwrap();
        assert_eq!(more.after(), Duration::ZERO);
        let mut injector = Injector::new(more);
        let uncounted: Vec<usize> = (1..=510).filter(|_| !injector.counts_this_unit()).collect();
        assert_eq!(uncounted.len(), 10, "one extra after every 50 counted units");
        assert_eq!(uncounted[0], 51);
        let mut spin_only = Injector::new("35us".parse().unwrap());
        assert!((0..100).all(|_| spin_only.counts_this_unit()));
    }

    #[test]
    fn a_spins_overrun_is_taken_off_the_next_spins() {
        let mut injector = Injector::new("2ms".parse().unwrap());
        let mut rec = UnitRecorder::default();
        injector.spin(&mut rec);
        assert!(injector.spin_owed <= 0.0, "a spin leaves nothing owed");
        // As if the vCPU were descheduled for 5 ms mid-spin: 3 ms credit after the next unit.
        injector.spin_owed = -0.005;
        injector.spin(&mut rec);
        assert!(injector.spin_owed <= -0.003, "the next unit spins not at all: {}", injector.spin_owed);
    }
}
