//! What a workload measures: each measure's name, unit and direction, and its value in a
//! run. Workloads declare them; run records carry them; studies and capacity searches
//! compare them without knowing which workload wrote them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// e.g. `OPM`, `TPM` or `q1 latency`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    /// The value in one run; `None` in a declaration, or when the run could not measure it.
    #[serde(default)]
    pub value: Option<f64>,
    /// An amount spent (CPU or bytes per unit, power), not a speed: its change reads
    /// "higher"/"lower", since "faster" means nothing for bytes written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost: bool,
}

impl Measure {
    /// A rate: more is better.
    pub fn higher(name: impl Into<String>, unit: &str, value: Option<f64>) -> Self {
        Self { name: name.into(), unit: unit.into(), higher_is_better: true, value, cost: false }
    }

    /// A time: less is better.
    pub fn lower(name: impl Into<String>, unit: &str, value: Option<f64>) -> Self {
        Self { name: name.into(), unit: unit.into(), higher_is_better: false, value, cost: false }
    }

    /// An amount spent per unit of work or over the run: less is better.
    pub fn cost(name: impl Into<String>, unit: &str, value: Option<f64>) -> Self {
        Self { cost: true, ..Self::lower(name, unit, value) }
    }
}

/// The value of the measure called `name` among `measures`.
pub fn value_of(measures: &[Measure], name: &str) -> Option<f64> {
    measures.iter().find(|m| m.name == name).and_then(|m| m.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_round_trip_and_are_found_by_name() {
        let ms = vec![Measure::higher("OPM", "orders/min", Some(12.5)), Measure::lower("q1 latency", "ms", None)];
        let back: Vec<Measure> = serde_json::from_str(&serde_json::to_string(&ms).unwrap()).unwrap();
        assert_eq!(back, ms);
        assert_eq!(value_of(&ms, "OPM"), Some(12.5));
        assert_eq!(value_of(&ms, "q1 latency"), None);
        assert_eq!(value_of(&ms, "TPM"), None);
    }
}
