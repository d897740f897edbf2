//! Database sizes and DS2's scaling rule.
//!
//! DS2 derives every row count from a size label: `S`, `M`, `L`, or `<n>MB` / `<n>GB`.
//! Megabyte sizes scale the Small base by n/10, `1GB` is Medium, and larger gigabyte sizes
//! scale the Large base by n/100. The tiers are discontinuous (2GB has fewer products than
//! 1GB); we keep that quirk so row counts match DS2 databases of the same label.

use anyhow::{bail, Result};
use std::fmt;

/// Row counts of a DS2 database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Canonical label, e.g. `10MB`.
    mb: u64,
    pub customers: i64,
    pub orders_per_month: i64,
    pub products: i64,
}

const SMALL: (i64, i64, i64) = (20_000, 1_000, 10_000);
const MEDIUM: (i64, i64, i64) = (2_000_000, 100_000, 100_000);
const LARGE: (i64, i64, i64) = (200_000_000, 10_000_000, 1_000_000);
/// DS3 caps custom sizes at 4 TB; larger ones overflow its 32-bit order counters.
const MAX_GB: u64 = 4096;

impl Size {
    /// Parses `S`, `M`, `L`, `<n>MB` or `<n>GB` (case-insensitive).
    pub fn parse(s: &str) -> Result<Self> {
        let hint = "use S, M, L, or a size like 10MB or 2GB";
        let up = s.trim().to_ascii_uppercase();
        let scaled = |base: (i64, i64, i64), num: i64, den: i64, mb: u64| Size {
            mb,
            customers: base.0 * num / den,
            orders_per_month: base.1 * num / den,
            products: base.2 * num / den,
        };
        let (digits, unit) = match up.as_str() {
            "S" => return Ok(scaled(SMALL, 1, 1, 10)),
            "M" => return Ok(scaled(MEDIUM, 1, 1, 1024)),
            "L" => return Ok(scaled(LARGE, 1, 1, 100 * 1024)),
            _ => match up.strip_suffix("MB").or_else(|| up.strip_suffix("GB")) {
                Some(d) => (d, &up[d.len()..]),
                None => bail!("unknown size '{s}': {hint}"),
            },
        };
        let n: u64 = match digits.parse() {
            Ok(n) if n > 0 => n,
            _ => bail!("unknown size '{s}': {hint}"),
        };
        Ok(match unit {
            "MB" if n < 1024 => scaled(SMALL, n as i64, 10, n),
            "MB" => bail!("size '{s}' is 1GB or more: write it in GB, e.g. {}GB", n / 1024),
            _ if n == 1 => scaled(MEDIUM, 1, 1, 1024),
            _ if n <= MAX_GB => scaled(LARGE, n as i64, 100, n * 1024),
            _ => bail!("size '{s}' is larger than the {MAX_GB}GB maximum"),
        })
    }

    pub fn orders(&self) -> i64 {
        12 * self.orders_per_month
    }

    /// Specials are 1 in 100 products up to 100k products, else 1 in 10,000.
    pub fn special_one_in(&self) -> u32 {
        if self.products <= 100_000 {
            100
        } else {
            10_000
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mb < 1024 {
            write!(f, "{}MB", self.mb)
        } else {
            write!(f, "{}GB", self.mb / 1024)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(s: &str) -> (i64, i64, i64) {
        let z = Size::parse(s).unwrap();
        (z.customers, z.orders(), z.products)
    }

    #[test]
    fn standard_sizes_match_ds2() {
        // DS2.1 sizes table (research/dvdstore.md 2.1).
        assert_eq!(counts("S"), (20_000, 12_000, 10_000));
        assert_eq!(counts("10MB"), counts("S"));
        assert_eq!(counts("M"), (2_000_000, 1_200_000, 100_000));
        assert_eq!(counts("1GB"), counts("M"));
        assert_eq!(counts("L"), (200_000_000, 120_000_000, 1_000_000));
        assert_eq!(counts("100gb"), counts("L"));
    }

    #[test]
    fn custom_sizes_follow_the_scaling_rule() {
        assert_eq!(counts("1MB"), (2_000, 1_200, 1_000));
        assert_eq!(counts("500MB"), (1_000_000, 600_000, 500_000));
        // The documented example: 14 GB -> 28M customers, 1.4M orders/month, 140k products.
        let z = Size::parse("14GB").unwrap();
        assert_eq!((z.customers, z.orders_per_month, z.products), (28_000_000, 1_400_000, 140_000));
        // The tier quirk: 2GB has fewer products than 1GB.
        assert_eq!(counts("2GB").2, 20_000);
    }

    #[test]
    fn labels_round_trip() {
        for s in ["1MB", "10MB", "1GB", "14GB", "100GB"] {
            assert_eq!(Size::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(Size::parse("s").unwrap().to_string(), "10MB");
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_hint() {
        for bad in ["", "XL", "0MB", "-5MB", "1.5GB", "10", "10TB", "5000GB", "2048MB"] {
            let e = Size::parse(bad).unwrap_err().to_string();
            assert!(e.contains("size"), "{bad}: {e}");
        }
        assert!(Size::parse("2048MB").unwrap_err().to_string().contains("2GB"));
    }
}
