//! Our own word lists for titles and actor names.
//!
//! DS2's lists are GPL data, so we synthesize pronounceable words from syllables instead.
//! Only the list sizes matter to the workload (1000 title words, 200 first and 200 last
//! names): they set how many full-text searches find something.

use std::collections::HashSet;
use std::sync::OnceLock;

const ONSETS: &[&str] = &[
    "B", "C", "D", "F", "G", "H", "J", "K", "L", "M", "N", "P", "R", "S", "T", "V", "W", "Z", "BR", "CH", "DR", "GR",
    "PL", "SH", "ST", "TR",
];
const VOWELS: &[&str] = &["A", "E", "I", "O", "U", "AI", "EA", "OU"];
const CODAS: &[&str] = &["", "N", "R", "S", "L", "X", "M", "ND", "RT", "ST"];

fn syllable(i: usize) -> String {
    let o = ONSETS[i % ONSETS.len()];
    let v = VOWELS[(i / ONSETS.len()) % VOWELS.len()];
    let c = CODAS[(i / ONSETS.len() / VOWELS.len()) % CODAS.len()];
    format!("{o}{v}{c}")
}

/// `count` distinct words of `syllables` syllables each, walking the syllable space with a
/// stride so neighbouring words look unrelated. `offset` separates the lists.
fn word_list(count: usize, syllables: u32, offset: usize) -> Vec<String> {
    let n = ONSETS.len() * VOWELS.len() * CODAS.len();
    let space = n.pow(syllables);
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count);
    let mut k = offset;
    while out.len() < count {
        let mut idx = (k.wrapping_mul(7919) + 13) % space;
        k += 1;
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(&syllable(idx % n));
            idx /= n;
        }
        if seen.insert(w.clone()) {
            out.push(w);
        }
    }
    out
}

pub struct Words {
    pub titles: Vec<String>,
    pub first_names: Vec<String>,
    pub last_names: Vec<String>,
}

/// The lists, built once per process.
pub fn words() -> &'static Words {
    static WORDS: OnceLock<Words> = OnceLock::new();
    WORDS.get_or_init(|| Words {
        titles: word_list(1000, 2, 0),
        first_names: word_list(200, 2, 50_000),
        last_names: word_list(200, 3, 90_000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_have_ds2_sizes_and_no_duplicates() {
        let w = words();
        for (list, n) in [(&w.titles, 1000), (&w.first_names, 200), (&w.last_names, 200)] {
            assert_eq!(list.len(), n);
            assert_eq!(list.iter().collect::<HashSet<_>>().len(), n);
            assert!(list.iter().all(|s| s.len() >= 2 && s.bytes().all(|b| b.is_ascii_uppercase())));
        }
    }
}
