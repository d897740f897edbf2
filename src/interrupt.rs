//! Ctrl-C, SIGTERM and SIGHUP become a count that long operations poll, so that an
//! interrupted run can still stop its workers, report what it measured and clean up its
//! files instead of dying mid-write; asking again cuts a gentle stop short.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How many stop requests (signals, or [`request`]) arrived so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// Routes the termination signals to the process-wide interrupt counter.
pub fn install() -> std::io::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        // SAFETY: the handler only adds to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, || {
                SIGNALS.fetch_add(1, Ordering::SeqCst);
            })?
        };
    }
    Ok(())
}

/// Raises the interrupt flag from inside the process, as a signal would (a remote agent
/// whose coordinator asked it to stop, or went away).
pub fn request() {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Whether the user asked the process to stop.
pub fn interrupted() -> bool {
    signals() > 0
}

/// How many times the user asked the process to stop so far.
pub fn signals() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

/// Requests closer together than this are one: a terminal's Ctrl-C reaches a study's run
/// both directly and as the study forwards it.
const SAME_REQUEST: Duration = Duration::from_secs(1);

/// Whether the user insists on a stop begun when this was made: asked (again) at least
/// [`SAME_REQUEST`] after it began, so that stopping gently (a grace period) is cut short.
pub struct Insistence {
    seen: usize,
    since: Instant,
}

impl Insistence {
    pub fn new() -> Self {
        Insistence { seen: signals(), since: Instant::now() }
    }

    pub fn insisted(&mut self) -> bool {
        let now = signals();
        if now > self.seen && self.since.elapsed() < SAME_REQUEST {
            self.seen = now;
        }
        now > self.seen
    }
}

impl Default for Insistence {
    fn default() -> Self {
        Self::new()
    }
}

/// Sleeps for `d`, waking every 100 ms to see whether the user asked to stop; returns
/// whether they did.
pub fn sleep(d: Duration) -> bool {
    let until = std::time::Instant::now() + d;
    while !interrupted() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
    true
}

/// Error returned by work that stopped because of [`interrupted`].
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// A stop request that sleeping threads wake up for at once (ramp-up delays, think time).
/// The flag is mirrored in an atomic so the hot path can poll it without a lock.
#[derive(Clone, Default)]
pub struct Stop(Arc<StopInner>);

#[derive(Default)]
struct StopInner {
    flag: AtomicBool,
    lock: Mutex<()>,
    cvar: Condvar,
}

impl Stop {
    pub fn request(&self) {
        let _guard = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.0.flag.store(true, Ordering::Relaxed);
        self.0.cvar.notify_all();
    }

    pub fn is_requested(&self) -> bool {
        self.0.flag.load(Ordering::Relaxed)
    }

    /// Sleeps for `d` unless a stop is requested first; returns whether to stop.
    pub fn sleep(&self, d: Duration) -> bool {
        let guard = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        let _unused =
            self.0.cvar.wait_timeout_while(guard, d, |_| !self.is_requested()).unwrap_or_else(|p| p.into_inner());
        self.is_requested()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn sleep_wakes_up_on_request() {
        let stop = Stop::default();
        let s2 = stop.clone();
        let t = Instant::now();
        let h = std::thread::spawn(move || s2.sleep(Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(50));
        stop.request();
        assert!(h.join().unwrap());
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn sleep_times_out_without_request() {
        assert!(!Stop::default().sleep(Duration::from_millis(10)));
    }
}
