//! Transaction mixes: the spec's standard deck, the Hammerora profiles of seed 002, and
//! custom weights. A terminal deals transactions from a shuffled deck holding each type as
//! many times as its weight, so the mix is exact over every deck, not just on average.

use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::Rng;
use serde::Serialize;

/// The transaction types, in the order of the workload's operation list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxType {
    NewOrder = 0,
    Payment = 1,
    OrderStatus = 2,
    Delivery = 3,
    StockLevel = 4,
}

pub const OPERATIONS: &[&str] = &["new_order", "payment", "order_status", "delivery", "stock_level"];

/// Named profiles, with weights in the seed's order: NewOrder/Payment/Delivery/StockLevel/OrderStatus.
const PROFILES: &[(&str, [u32; 5])] = &[
    ("standard", [45, 43, 4, 4, 4]),
    ("hammerora-default", [20, 10, 10, 50, 30]),
    ("hammerora-query", [1, 1, 1, 50, 30]),
    ("hammerora-update", [20, 10, 10, 1, 1]),
];

/// Written as text everywhere (study files, run specs): a profile name or five weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Profile {
    pub name: String,
    /// NewOrder/Payment/Delivery/StockLevel/OrderStatus, as the seed writes them.
    pub weights: [u32; 5],
}

impl Default for Profile {
    fn default() -> Self {
        "standard".parse().expect("the standard profile exists")
    }
}

impl std::str::FromStr for Profile {
    type Err = anyhow::Error;

    /// A profile name (`default`, `query` and `update` are short for the Hammerora ones) or
    /// five weights `NO/P/D/SL/OS`.
    fn from_str(s: &str) -> Result<Self> {
        let full = match s {
            "default" | "query" | "update" => format!("hammerora-{s}"),
            _ => s.to_string(),
        };
        if let Some((name, w)) = PROFILES.iter().find(|(n, _)| *n == full) {
            return Ok(Self { name: name.to_string(), weights: *w });
        }
        let parts: Vec<&str> = s.split(['/', ',']).collect();
        let weights: Option<Vec<u32>> = parts.iter().map(|p| p.trim().parse().ok()).collect();
        match weights {
            Some(w) if w.len() == 5 && w.iter().sum::<u32>() > 0 && w.iter().all(|&x| x <= 1000) => {
                Ok(Self { name: format!("custom {s}"), weights: [w[0], w[1], w[2], w[3], w[4]] })
            }
            _ => bail!(
                "unknown TPC-C profile '{s}': use standard, hammerora-default, hammerora-query, hammerora-update, \
                 or five weights NewOrder/Payment/Delivery/StockLevel/OrderStatus such as 45/43/4/4/4"
            ),
        }
    }
}

impl TryFrom<String> for Profile {
    type Error = anyhow::Error;

    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<Profile> for String {
    fn from(p: Profile) -> String {
        p.name.strip_prefix("custom ").map_or(p.name.clone(), String::from)
    }
}

impl Profile {
    /// Each type's share of the mix, in percent, keyed by operation name.
    pub fn shares(&self) -> Vec<(&'static str, f64)> {
        let total: u32 = self.weights.iter().sum();
        let [no, p, d, sl, os] = self.weights;
        [
            (TxType::NewOrder, no),
            (TxType::Payment, p),
            (TxType::OrderStatus, os),
            (TxType::Delivery, d),
            (TxType::StockLevel, sl),
        ]
        .into_iter()
        .map(|(t, w)| (OPERATIONS[t as usize], 100.0 * w as f64 / total as f64))
        .collect()
    }
}

pub struct Deck {
    cards: Vec<TxType>,
    at: usize,
}

impl Deck {
    pub fn new(p: &Profile) -> Self {
        let [no, pay, d, sl, os] = p.weights;
        let mut cards = Vec::new();
        for (t, n) in [
            (TxType::NewOrder, no),
            (TxType::Payment, pay),
            (TxType::Delivery, d),
            (TxType::StockLevel, sl),
            (TxType::OrderStatus, os),
        ] {
            cards.extend(std::iter::repeat_n(t, n as usize));
        }
        let at = cards.len();
        Self { cards, at }
    }

    pub fn draw(&mut self, rng: &mut impl Rng) -> TxType {
        if self.at == self.cards.len() {
            self.cards.shuffle(rng);
            self.at = 0;
        }
        self.at += 1;
        self.cards[self.at - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn profiles_parse_by_name_alias_or_weights() {
        assert_eq!("query".parse::<Profile>().unwrap().weights, [1, 1, 1, 50, 30]);
        assert_eq!("hammerora-update".parse::<Profile>().unwrap().weights, [20, 10, 10, 1, 1]);
        assert_eq!("10,10,1,1,1".parse::<Profile>().unwrap().weights, [10, 10, 1, 1, 1]);
        for bad in ["fast", "1/2/3", "0/0/0/0/0", "a/b/c/d/e"] {
            assert!(bad.parse::<Profile>().unwrap_err().to_string().contains("NewOrder/Payment"), "{bad}");
        }
    }

    #[test]
    fn a_deck_deals_the_exact_mix() {
        let p: Profile = "default".parse().unwrap();
        let mut deck = Deck::new(&p);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut n = [0u32; 5];
        for _ in 0..120 * 3 {
            n[deck.draw(&mut rng) as usize] += 1;
        }
        // NO, P, OS, D, SL in operation order; weights NO/P/D/SL/OS = 20/10/10/50/30.
        assert_eq!(n, [60, 30, 90, 30, 150]);
        let shares = Profile::default().shares();
        assert_eq!(shares[0], ("new_order", 45.0));
        assert_eq!(shares[2], ("order_status", 4.0));
    }
}
