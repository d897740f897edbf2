//! Test-only slowdowns: a busy-wait after every unit, so the verdict checks (and their
//! tests) have a change of known size to find.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What is added to every unit: nothing, a fixed busy-wait (`"35us"`), or a share of the
/// unit's own time (`"2%"`: every unit takes 2% longer, a nominal throughput ratio of 1 / 1.02
/// whatever the machine's speed, where a fixed wait is a larger share on a faster day; the
/// spin's after-effects make the real change somewhat larger, see the README's verdict checks).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum InjectedDelay {
    #[default]
    None,
    Fixed(Duration),
    Share(f64),
}

impl InjectedDelay {
    /// The busy-wait after a unit that worked for `work`.
    pub fn after(self, work: Duration) -> Duration {
        match self {
            Self::None => Duration::ZERO,
            Self::Fixed(d) => d,
            Self::Share(p) => work.mul_f64(p),
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Self::None
    }
}

impl FromStr for InjectedDelay {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Some(pct) = s.strip_suffix('%') {
            return match pct.trim().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => Ok(Self::Share(p / 100.0)),
                _ => Err(format!("'{s}' is not a share of a unit's time; use e.g. 2%")),
            };
        }
        let d = crate::sys::units::parse_duration(s).map_err(|e| format!("{e}, or a share such as 2%"))?;
        Ok(if d.is_zero() { Self::None } else { Self::Fixed(d) })
    }
}

impl fmt::Display for InjectedDelay {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::None => f.write_str("0s"),
            Self::Fixed(d) => write!(f, "{}", humantime::format_duration(*d)),
            Self::Share(p) => write!(f, "{}%", p * 100.0),
        }
    }
}

impl Serialize for InjectedDelay {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for InjectedDelay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_is_a_duration_or_a_share_of_the_units_time() {
        let fixed: InjectedDelay = "35us".parse().unwrap();
        assert_eq!(fixed.after(Duration::from_millis(3)), Duration::from_micros(35));
        let share: InjectedDelay = "2%".parse().unwrap();
        assert_eq!(share.after(Duration::from_millis(3)), Duration::from_micros(60));
        assert_eq!("0".parse::<InjectedDelay>().unwrap(), InjectedDelay::None);
        for text in ["35us", "2%"] {
            let d: InjectedDelay = text.parse().unwrap();
            assert_eq!(d.to_string().parse::<InjectedDelay>().unwrap(), d, "{text} round-trips");
        }
        for bad in ["0%", "-2%", "150%", "two"] {
            assert!(bad.parse::<InjectedDelay>().is_err(), "{bad}");
        }
    }
}
