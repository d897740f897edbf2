//! Test-only slowdowns, so the verdict checks (and their tests) have a change of known size
//! to find: a busy-wait after every unit, or units run and not counted.

use super::stats::UnitRecorder;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// What is added to the work: nothing; a fixed busy-wait after every unit (`"35us"`); a
/// busy-wait of a share of each unit's own time (`"2%"`: a nominal throughput ratio of
/// 1 / 1.02 whatever the machine's speed, though the spin's after-effects make the real
/// change larger, see the README's verdict checks); or a share more units, run like the others
/// and not counted (`"2% more units"`: every 51st unit, a ratio of exactly 1 / 1.02 in
/// throughput and in cost per unit, since the extra units are the same work).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum InjectedSlowdown {
    #[default]
    None,
    Fixed(Duration),
    Share(f64),
    MoreUnits(f64),
}

const MORE_UNITS: &str = "more units";

impl InjectedSlowdown {
    /// The busy-wait after a unit that worked for `work`.
    fn after(self, work: Duration) -> Duration {
        match self {
            Self::None | Self::MoreUnits(_) => Duration::ZERO,
            Self::Fixed(d) => d,
            Self::Share(p) => work.mul_f64(p),
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Self::None
    }
}

/// One worker's injected slowdown, unit by unit.
pub(crate) struct Injector {
    slowdown: InjectedSlowdown,
    /// Whether the current unit is an extra, uncounted one.
    extra: bool,
    /// The share of an extra unit owed so far, carried from unit to unit so that 2% makes
    /// exactly one unit in 51 an extra.
    owed: f64,
}

impl Injector {
    pub fn new(slowdown: InjectedSlowdown) -> Self {
        Self { slowdown, extra: false, owed: 0.0 }
    }

    /// Busy-waits after a unit that started at `t0`, for what its work time (less its wait
    /// for a turn) calls for, and records the wait as untimed.
    pub fn spin(&self, t0: Instant, rec: &mut UnitRecorder) {
        let spin = self.slowdown.after(t0.elapsed().saturating_sub(rec.turn_wait()));
        if !spin.is_zero() {
            let t = Instant::now();
            while t.elapsed() < spin {
                std::hint::spin_loop();
            }
            rec.untimed(t.elapsed());
        }
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
                Ok(p) if p > 0.0 && p <= 100.0 && more_units => Ok(Self::MoreUnits(p / 100.0)),
                Ok(p) if p > 0.0 && p <= 100.0 => Ok(Self::Share(p / 100.0)),
                _ => Err(format!("'{s}' is not a share between 0 and 100%; use e.g. 2% or 2% {MORE_UNITS}")),
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
            Self::Share(p) => write!(f, "{}%", p * 100.0),
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
    fn a_delay_is_a_duration_or_a_share_of_the_units_time() {
        let fixed: InjectedSlowdown = "35us".parse().unwrap();
        assert_eq!(fixed.after(Duration::from_millis(3)), Duration::from_micros(35));
        let share: InjectedSlowdown = "2%".parse().unwrap();
        assert_eq!(share.after(Duration::from_millis(3)), Duration::from_micros(60));
        assert_eq!("0".parse::<InjectedSlowdown>().unwrap(), InjectedSlowdown::None);
        assert_eq!(share.to_string(), "2%");
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
        assert_eq!(more.after(Duration::from_millis(3)), Duration::ZERO);
        let mut injector = Injector::new(more);
        let uncounted: Vec<usize> = (1..=510).filter(|_| !injector.counts_this_unit()).collect();
        assert_eq!(uncounted.len(), 10, "one extra after every 50 counted units");
        assert_eq!(uncounted[0], 51);
        let mut spin_only = Injector::new("2%".parse().unwrap());
        assert!((0..100).all(|_| spin_only.counts_this_unit()));
    }
}
