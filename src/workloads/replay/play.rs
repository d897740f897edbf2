//! Plays a captured log's events against a database: each captured session on its own
//! connection, its statements in their order, on a thread of its own. One reader goes
//! through the log in order and hands each session its events through a queue of its own.
//! The queues share one budget ([`BUFFERED`] bytes of statements), so a log of any size
//! streams through in bounded memory. A queue of its own per session, not a bounded one: a
//! session waiting on a row lock must not stop the reader from handing the lock's holder
//! its next statement (with a short queue per session, a full one did, and the replay hung).
//!
//! As recorded, every event is due at its recorded offset from the log's first event
//! (divided by `speed`): a session waits until its statement is due, and how late it
//! started (its lag) is measured; the reader keeps no further than [`HORIZON`] ahead of the
//! schedule. As fast as possible, nothing waits but a session that connected after others
//! disconnected, for them: each session runs its statements back to back, and sessions run
//! side by side as far as the log's order allows.

use super::event::{Event, Param, SessionKey, What};
use super::tally::{class_of, Summary, Tally};
use crate::interrupt::Stop;
use crate::targets::sql::replay::{Failure, ReplaySession};
use crate::targets::Connection;
use anyhow::{bail, Result};
use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How far ahead of the schedule the reader hands out events (as recorded).
const HORIZON: Duration = Duration::from_secs(1);
/// Statement text the sessions' queues may hold in all.
const BUFFERED: usize = 64 << 20;
/// How long the reader waits for room with no statement finishing before it calls the
/// replay stuck.
const STUCK: Duration = Duration::from_secs(60);

/// How a replay is paced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// At the recorded times, `speed` times as fast.
    Recorded { speed: f64 },
    /// Each session as fast as it can.
    Fast,
}

/// A replay: where its sessions connect, how it is paced, which sessions it plays.
pub struct Play<'a> {
    pub connect: &'a (dyn Fn() -> Result<Connection> + Sync),
    pub pacing: Pacing,
    /// Only the sessions the log says connected to this database (all when `None`).
    pub database: Option<&'a str>,
    /// Sessions open at once, at most: a log with more is refused.
    pub sessions: usize,
}

enum Msg {
    Run { sql: String, params: Vec<Param>, prepared: Option<String>, due: Option<Instant> },
    FailedAtCapture,
}

/// What the sessions share: the replay's tally, the first failure that ends the replay,
/// how many are open, and the stop they all heed.
#[derive(Default)]
struct Shared {
    tally: Mutex<Tally>,
    fatal: Mutex<Option<String>>,
    /// Sessions whose threads have not ended, and the signal that one did.
    open: Mutex<usize>,
    ended: Condvar,
    /// Bytes of statements in the queues, and statements finished so far.
    buffered: Mutex<(usize, u64)>,
    room: Condvar,
    stop: Stop,
}

impl Shared {
    /// A session took a statement of `bytes` from its queue.
    fn taken(&self, bytes: usize) {
        let mut buffered = self.buffered.lock().unwrap_or_else(|p| p.into_inner());
        buffered.0 = buffered.0.saturating_sub(bytes);
        buffered.1 += 1;
        self.room.notify_all();
    }

    fn fail(&self, why: String) {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
        self.stop.request();
    }

    fn fatal(&self) -> Option<String> {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Play<'_> {
    /// Plays `events` to their end; what it measured.
    pub fn run(&self, events: impl Iterator<Item = Result<Event>>) -> Result<Summary> {
        let shared = Shared::default();
        let started = Instant::now();
        let mut sessions = 0u64;
        let read = std::thread::scope(|scope| -> Result<()> {
            let mut queues: HashMap<SessionKey, Sender<Msg>> = HashMap::new();
            let mut left_out: HashSet<SessionKey> = HashSet::new();
            let mut first_us = None;
            let outcome = (|| -> Result<()> {
                for event in events {
                    let event = event?;
                    if let Some(why) = shared.fatal() {
                        bail!("{why}");
                    }
                    if crate::interrupt::interrupted() {
                        return Err(crate::interrupt::Interrupted.into());
                    }
                    let due = self.due(started, *first_us.get_or_insert(event.at_us), event.at_us);
                    if let Some(due) = due {
                        self.wait_for(due.checked_sub(HORIZON).unwrap_or(due), &shared)?;
                    }
                    match event.what {
                        What::Connect { database } => {
                            queues.remove(&event.session);
                            if self.database.is_some_and(|d| database.as_deref().is_some_and(|have| have != d)) {
                                left_out.insert(event.session);
                                continue;
                            }
                            left_out.remove(&event.session);
                        }
                        What::Disconnect => drop(queues.remove(&event.session)),
                        _ if left_out.contains(&event.session) => {}
                        // An error before any statement (a failed login): nothing to replay.
                        What::FailedAtCapture if !queues.contains_key(&event.session) => {}
                        what => {
                            if !queues.contains_key(&event.session) {
                                self.admit(&shared, queues.len())?;
                                let (tx, rx) = channel();
                                let shared = &shared;
                                scope.spawn(move || session(self.connect, rx, shared, due));
                                queues.insert(event.session.clone(), tx);
                                sessions += 1;
                            }
                            let msg = match what {
                                What::Statement { sql, params, prepared } => {
                                    self.make_room(&shared, size_of(&sql, &params))?;
                                    Msg::Run { sql, params, prepared, due }
                                }
                                _ => Msg::FailedAtCapture,
                            };
                            // A session that ended early (its connection broke) says why in `fatal`.
                            let _ = queues[&event.session].send(msg);
                        }
                    }
                }
                Ok(())
            })();
            if outcome.is_err() {
                shared.stop.request();
            }
            // The queues close: each session ends once it has run what it was given.
            drop(queues);
            outcome
        });
        if let Some(why) = shared.fatal() {
            bail!("{why}");
        }
        read?;
        let elapsed = started.elapsed().as_secs_f64();
        let tally = shared.tally.into_inner().unwrap_or_else(|p| p.into_inner());
        Ok(tally.summary(elapsed, sessions, matches!(self.pacing, Pacing::Recorded { .. })))
    }

    /// When an event recorded at `at_us` is due (as recorded).
    fn due(&self, started: Instant, first_us: i64, at_us: i64) -> Option<Instant> {
        match self.pacing {
            Pacing::Recorded { speed } => {
                let offset = (at_us - first_us).max(0) as f64 / 1e6 / speed;
                Some(started + Duration::from_secs_f64(offset))
            }
            Pacing::Fast => None,
        }
    }

    /// Waits until `t`, or until the replay must stop.
    fn wait_for(&self, t: Instant, shared: &Shared) -> Result<()> {
        while let Some(left) = t.checked_duration_since(Instant::now()) {
            if shared.stop.sleep(left.min(Duration::from_millis(100))) || crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
        }
        Ok(())
    }

    /// Waits until the queues have room for `bytes` more, and takes it. A replay in which no
    /// statement finishes for [`STUCK`] while the queues are full is stuck: a session waits
    /// on a lock held by one whose next statement lies further on in the log than the
    /// queues hold.
    fn make_room(&self, shared: &Shared, bytes: usize) -> Result<()> {
        let mut buffered = shared.buffered.lock().unwrap_or_else(|p| p.into_inner());
        let (mut since, mut done) = (Instant::now(), buffered.1);
        while buffered.0 > 0 && buffered.0 + bytes > BUFFERED {
            if shared.stop.is_requested() || crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            if buffered.1 != done {
                (since, done) = (Instant::now(), buffered.1);
            } else if since.elapsed() > STUCK {
                bail!(
                    "the replay is stuck: no statement finished for {} s with {} MB of statements waiting; a session \
                     waits on a lock whose holder's next statement is further on in the log",
                    STUCK.as_secs(),
                    BUFFERED >> 20
                );
            }
            buffered =
                shared.room.wait_timeout(buffered, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
        buffered.0 += bytes;
        Ok(())
    }

    /// Counts one more session open, beside `in_log` the log still has open. More than
    /// [`Play::sessions`] open in the log is refused: waiting for one of them to end could
    /// wait forever, as a session ends only at its disconnection, further on in the log.
    /// Sessions the log has closed but that still run their last statements are waited for:
    /// as recorded while [`Play::sessions`] are open; as fast as possible always, so that a
    /// session that connected after others disconnected starts after them here too, and the
    /// replay never has more sessions at once than the log had (a log of short sessions one
    /// after another would otherwise replay as hundreds at once).
    fn admit(&self, shared: &Shared, in_log: usize) -> Result<()> {
        if in_log >= self.sessions {
            bail!(
                "the log has more than {} sessions open at once: raise the replay's sessions (the server's \
                 max_connections permitting)",
                self.sessions
            );
        }
        let fast = self.pacing == Pacing::Fast;
        let mut open = shared.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut since = (Instant::now(), *open);
        while *open >= self.sessions || fast && *open > in_log {
            if shared.stop.is_requested() || crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            if *open != since.1 {
                since = (Instant::now(), *open);
            } else if since.0.elapsed() > STUCK {
                bail!(
                    "the replay is stuck: no session the log had closed ended for {} s; one waits on a lock \
                     whose holder's next statement is further on in the log",
                    STUCK.as_secs()
                );
            }
            open = shared.ended.wait_timeout(open, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
        *open += 1;
        Ok(())
    }
}

/// The statement a session ran last, held until the next event says whether it had failed
/// at capture too.
struct Ran {
    class: String,
    took_us: u64,
    lag_us: Option<u64>,
    error: Option<String>,
}

/// One captured session: connects when it is due, runs what it is handed, and adds its
/// tally to the replay's when its queue closes.
fn session(
    connect: &(dyn Fn() -> Result<Connection> + Sync),
    rx: Receiver<Msg>,
    shared: &Shared,
    due: Option<Instant>,
) {
    let mut tally = Tally::default();
    let mut last: Option<Ran> = None;
    let record = |ran: Option<Ran>, failed_then: bool, tally: &mut Tally| {
        if let Some(r) = ran {
            tally.statement(r.class, r.took_us, r.lag_us, r.error.as_deref(), failed_then);
        }
    };
    let until_due = |due: Option<Instant>| due.and_then(|d| d.checked_duration_since(Instant::now()));
    let stopped = until_due(due).is_some_and(|d| shared.stop.sleep(d));
    let open = || connect().and_then(|c| Ok(ReplaySession::new(c)?));
    match (stopped, open()) {
        (true, _) => {}
        (false, Err(e)) => shared.fail(format!("a replayed session cannot connect: {e:#}")),
        (false, Ok(mut s)) => {
            for msg in rx.iter() {
                let Msg::Run { sql, params, prepared, due } = msg else {
                    record(last.take(), true, &mut tally);
                    continue;
                };
                shared.taken(size_of(&sql, &params));
                record(last.take(), false, &mut tally);
                if until_due(due).is_some_and(|d| shared.stop.sleep(d)) || shared.stop.is_requested() {
                    break;
                }
                let start = Instant::now();
                let lag_us = due.map(|d| start.saturating_duration_since(d).as_micros() as u64);
                let outcome = s.run(&sql, &params, prepared.as_deref());
                let took_us = start.elapsed().as_micros() as u64;
                let error = match outcome {
                    Ok(_) => None,
                    Err(Failure::Refused(why)) => Some(why),
                    Err(Failure::Broken(why)) => {
                        shared.fail(format!(
                            "a replayed session stopped: {why} (at '{}')",
                            super::event::shorten(&sql, 60)
                        ));
                        break;
                    }
                };
                last = Some(Ran { class: class_of(&sql), took_us, lag_us, error });
            }
        }
    }
    record(last, false, &mut tally);
    shared.tally.lock().unwrap_or_else(|p| p.into_inner()).add(tally);
    *shared.open.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
    shared.ended.notify_all();
}

/// What a statement takes in a queue.
fn size_of(sql: &str, params: &[Param]) -> usize {
    sql.len() + params.iter().map(|p| p.text().map_or(0, str::len) + 24).sum::<usize>() + 64
}
