//! A common start for run processes that take turns with each other: a study's variants
//! that need a process of their own (AES-NI masking, control groups) interleave with the
//! others from there. Each run sets up, says so on stdout and waits for its parent's go on
//! stdin. The go names the start on CLOCK_MONOTONIC, which every process on the machine
//! reads alike, so the runs' slices line up to the microsecond.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

/// The line a run prints when it is set up and waits for the start.
pub const READY: &str = "dbvs-run: ready";
const GO: &str = "dbvs-run: go at";

/// This run's places in a schedule of slices shared with other run processes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedTurns {
    /// The place of each of this run's variants (`db` first, then `interleave`).
    pub places: Vec<usize>,
    /// Places in a round, across every process.
    pub of: usize,
    /// The file that counts every place's units in flight (`run::board`).
    pub board: std::path::PathBuf,
}

impl SharedTurns {
    pub fn check(&self, variants: usize) -> Result<()> {
        let mut sorted = self.places.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if self.places.len() != variants || sorted.len() != variants || sorted.last().is_some_and(|&p| p >= self.of) {
            bail!(
                "turns: {variants} variants need {variants} distinct places below {}, got {:?}",
                self.of,
                self.places
            );
        }
        Ok(())
    }
}

fn monotonic_ns() -> u128 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

/// The parent's go: a start `lead` from now (time for every run to read it).
pub fn go_line(lead: Duration) -> String {
    format!("{GO} {}\n", monotonic_ns() + lead.as_nanos())
}

/// The start a go line names, as an `Instant` of this process.
fn parse_go(line: &str) -> Result<Instant> {
    let ns: u128 = line
        .strip_prefix(GO)
        .and_then(|rest| rest.trim().parse().ok())
        .with_context(|| format!("expected '{GO} <ns>' on stdin, got {:?}", line.trim()))?;
    let (now, now_ns) = (Instant::now(), monotonic_ns());
    Ok(match ns.checked_sub(now_ns) {
        Some(ahead) => now + Duration::from_nanos(ahead as u64),
        None => now.checked_sub(Duration::from_nanos((now_ns - ns) as u64)).unwrap_or(now),
    })
}

/// The run's side: says it is ready, waits for the go and then for the start it names.
pub fn ready_and_wait() -> Result<Instant> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY}")?;
    out.flush()?;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        bail!("the study ended before this run's start");
    }
    let start = parse_go(&line)?;
    std::thread::sleep(start.saturating_duration_since(Instant::now()));
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_go_line_names_the_same_instant_in_any_process() {
        let before = Instant::now();
        let start = parse_go(&go_line(Duration::from_millis(200))).unwrap();
        let ahead = start.duration_since(before);
        // A descheduled test thread may read the clock late, never early.
        assert!(ahead >= Duration::from_millis(199) && ahead < Duration::from_secs(1), "{ahead:?}");
        assert!(parse_go("go").is_err());
    }

    fn turns(places: &[usize]) -> SharedTurns {
        SharedTurns { places: places.to_vec(), of: 3, board: "turns.board".into() }
    }

    #[test]
    fn places_must_be_distinct_and_inside_the_round() {
        assert!(turns(&[0, 2]).check(2).is_ok());
        assert!(turns(&[1, 1]).check(2).is_err());
        assert!(turns(&[0, 3]).check(2).is_err());
        assert!(turns(&[0]).check(2).is_err());
    }
}
