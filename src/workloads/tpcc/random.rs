//! TPC-C's random functions (clause 4.3.2): NURand with its C constants, last names from
//! syllables, random strings. Strings use upper-case letters and digits only, so every
//! engine's collation (C, binary, case-insensitive) sorts them the same way and the batch
//! queries return the same rows everywhere.

use rand::Rng;

/// NURand's A for customer last names (0..999), customer ids (1..3000) and item ids.
pub const A_LAST: i64 = 255;
pub const A_CUSTOMER: i64 = 1023;
pub const A_ITEM: i64 = 8191;

/// The C constants of one NURand use: load time or run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constants {
    pub last: i64,
    pub customer: i64,
    pub item: i64,
}

impl Constants {
    pub fn random(rng: &mut impl Rng) -> Self {
        Self {
            last: rng.random_range(0..=A_LAST),
            customer: rng.random_range(0..=A_CUSTOMER),
            item: rng.random_range(0..=A_ITEM),
        }
    }

    /// Run-time constants for a database loaded with `load`. Clause 2.1.6.1: the run-time C
    /// for last names differs from the load-time one by 65..=119, but not 96 or 112, so the
    /// names looked up at run time are not the same skew as the ones loaded.
    pub fn for_run(load: &Constants, rng: &mut impl Rng) -> Self {
        let mut c = Self::random(rng);
        loop {
            let delta = (c.last - load.last).abs();
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                return c;
            }
            c.last = rng.random_range(0..=A_LAST);
        }
    }
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut impl Rng, a: i64, c: i64, x: i64, y: i64) -> i64 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The last name of number 0..=999: one syllable per decimal digit.
pub fn last_name(n: i64) -> String {
    let n = n as usize;
    [SYLLABLES[n / 100], SYLLABLES[n / 10 % 10], SYLLABLES[n % 10]].concat()
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// A random string of `min..=max` characters (TPC-C's a-string).
pub fn astring(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    (0..n).map(|_| ALNUM[rng.random_range(0..ALNUM.len())] as char).collect()
}

/// A random string of letters only (first names, so prefix queries behave alike everywhere).
pub fn letters(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    (0..n).map(|_| LETTERS[rng.random_range(0..LETTERS.len())] as char).collect()
}

/// A random string of digits (TPC-C's n-string).
pub fn nstring(rng: &mut impl Rng, n: usize) -> String {
    (0..n).map(|_| (b'0' + rng.random_range(0..10u8)) as char).collect()
}

/// A zip code: four random digits and "11111".
pub fn zip(rng: &mut impl Rng) -> String {
    nstring(rng, 4) + "11111"
}

/// Item and stock data: 26..50 characters, 10% with "ORIGINAL" somewhere inside.
pub fn data_with_original(rng: &mut impl Rng) -> String {
    let mut s = astring(rng, 26, 50);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn last_names_follow_the_syllable_digits() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..200_000 {
            let v = nurand(&mut rng, A_LAST, 123, 0, 999);
            assert!((0..=999).contains(&v));
            hits[v as usize] += 1;
        }
        let (min, max) = (hits.iter().min().unwrap(), hits.iter().max().unwrap());
        assert!(*max > 4 * *min.max(&1), "NURand should be non-uniform: {min}..{max}");
    }

    #[test]
    fn run_constants_keep_the_required_distance_from_load() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..500 {
            let load = Constants::random(&mut rng);
            let run = Constants::for_run(&load, &mut rng);
            let d = (run.last - load.last).abs();
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "{d}");
        }
    }

    #[test]
    fn strings_have_their_lengths_and_original_marks() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 10_000;
        let originals = (0..n).filter(|_| data_with_original(&mut rng).contains("ORIGINAL")).count();
        assert!((800..1200).contains(&originals), "{originals}");
        let s = astring(&mut rng, 8, 16);
        assert!((8..=16).contains(&s.len()));
        assert_eq!(zip(&mut rng).len(), 9);
    }
}
