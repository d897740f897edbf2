//! Units people write: durations (`90s`, `10m`, `0.5`) and byte sizes (`512MB`, `2GB`).

use std::time::Duration;

/// Parses `60s`, `10m`, `1h30m`, or a plain number of seconds (`0.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| format!("'{s}' is not a valid number of seconds"));
    }
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration ({e}); use e.g. 90s, 10m or 1h"))
}

/// Serde for a duration written as text (`"5s"`, `"250ms"`), as people write them in files.
pub mod duration_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        super::parse_duration(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// [`duration_text`] for an optional duration.
pub mod optional_duration_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_text::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| super::parse_duration(&t).map_err(serde::de::Error::custom)).transpose()
    }
}

/// Parses a size of at least 1 MB: `64MB`, `2gb`, `512KB` x 2048, or bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("GB") {
        (n, 1u64 << 30)
    } else if let Some(n) = t.strip_suffix("MB") {
        (n, 1 << 20)
    } else if let Some(n) = t.strip_suffix("KB") {
        (n, 1 << 10)
    } else {
        (t.as_str(), 1)
    };
    match num.trim().parse::<u64>() {
        Ok(n) if n > 0 && n.checked_mul(mult).is_some_and(|b| b >= 1 << 20) => Ok(n * mult),
        _ => Err(format!("invalid size '{s}': use a size of at least 1MB such as 512MB or 2GB")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_optional_duration_reads_back_as_itself_absent_or_present() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T(#[serde(with = "optional_duration_text")] Option<Duration>);
        for t in [T(None), T(Some(Duration::from_millis(1500)))] {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), t, "{json}");
        }
    }

    #[test]
    fn durations_accept_units_and_plain_seconds() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn sizes_take_units_and_a_floor_of_one_megabyte() {
        assert_eq!(parse_bytes("64MB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2gb"), Ok(2 << 30));
        for bad in ["", "0MB", "12", "1.5GB", "-1MB", "999KB"] {
            assert!(parse_bytes(bad).unwrap_err().contains("at least 1MB"), "{bad}");
        }
    }
}
