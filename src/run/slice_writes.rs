//! What the disks under one place's database wrote in an interleaved run.
//!
//! Where the places share a disk, per slice ([`SliceWrites`]): the device counters read when
//! the place's first unit of a slice starts and whenever its last unit in flight ends, so
//! each slice's writes (its commits' fsyncs, and whatever the machine flushed meanwhile)
//! count for the place whose slice it was. Background writes land in whichever slice runs,
//! alike for every place; a per-task count cannot be had (`sys::disk_writes`).
//!
//! Where each place has disks of its own (each variant's RAM disk model), over its whole
//! measured window ([`WindowWrites`]): a server's checkpointer and background writer write
//! in other places' slices too, and those writes are still its own.

use crate::sys::disk_writes::DiskWrites;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// How a place's writes are counted.
pub enum PlaceWrites {
    Slices(SliceWrites),
    Window(WindowWrites),
}

impl PlaceWrites {
    /// Counts what `disks` write: over the whole window when no other place writes to them.
    pub fn new(disks: DiskWrites, of_its_own: bool) -> Self {
        if of_its_own {
            PlaceWrites::Window(WindowWrites::new(disks))
        } else {
            PlaceWrites::Slices(SliceWrites::new(disks))
        }
    }

    /// Bytes written in the place's measured window, as its form counts them (`None`
    /// without disks); `counts` says whether a slice that started then is in the window.
    pub fn written(&self, counts: impl Fn(u64) -> bool) -> Option<u64> {
        match self {
            PlaceWrites::Slices(w) => w.written(counts),
            PlaceWrites::Window(w) => w.written(),
        }
    }
}

/// What disks no other place writes to wrote from the place's window start to its end.
pub struct WindowWrites {
    disks: DiskWrites,
    /// The counter at the window's start and end, once read.
    marks: Mutex<(Option<u64>, Option<u64>)>,
}

impl WindowWrites {
    pub fn new(disks: DiskWrites) -> Self {
        Self { disks, marks: Mutex::default() }
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, (Option<u64>, Option<u64>)> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn start(&self) {
        self.marks().0 = Some(self.disks.bytes());
    }

    pub fn end(&self) {
        self.marks().1 = Some(self.disks.bytes());
    }

    /// Bytes written since the window started, up to its end or now (`None` without disks).
    pub fn written(&self) -> Option<u64> {
        if self.disks.is_empty() {
            return None;
        }
        let (from, to) = *self.marks();
        let Some(from) = from else { return Some(0) };
        Some(to.unwrap_or_else(|| self.disks.bytes()).saturating_sub(from))
    }
}

pub struct SliceWrites {
    disks: DiskWrites,
    turn: Mutex<Turn>,
    /// Bytes written in the slices that have closed and counted.
    closed: AtomicU64,
}

/// The slice the place is in or was last in.
#[derive(Clone, Copy, Default)]
struct Turn {
    slice: Option<i64>,
    /// When it started, in the window marks' nanoseconds.
    started_ns: u64,
    /// The disks' counter at its start and when its units in flight last ran out.
    from: u64,
    idle: u64,
}

impl SliceWrites {
    pub fn new(disks: DiskWrites) -> Self {
        Self { disks, turn: Mutex::default(), closed: AtomicU64::new(0) }
    }

    fn turn(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The place's first unit in flight starts, in slice `slice` at `now_ns`; the slice
    /// before closes (counted when `counts` says its start was in the window).
    pub fn started(&self, slice: i64, now_ns: u64, counts: impl Fn(u64) -> bool) {
        let mut turn = self.turn();
        if turn.slice == Some(slice) {
            return; // its units ran out for a moment and start again in the same slice
        }
        if turn.slice.is_some() && counts(turn.started_ns) {
            self.closed.fetch_add(turn.idle.saturating_sub(turn.from), Relaxed);
        }
        let at = self.disks.bytes();
        *turn = Turn { slice: Some(slice), started_ns: now_ns, from: at, idle: at };
    }

    /// The place's last unit in flight has ended.
    pub fn idle(&self) {
        // Read under the lock, so a slice that starts meanwhile cannot begin after it.
        let mut turn = self.turn();
        turn.idle = self.disks.bytes();
    }

    /// Bytes written in the place's counted slices, the last one too (`None` without disks).
    pub fn written(&self, counts: impl Fn(u64) -> bool) -> Option<u64> {
        if self.disks.is_empty() {
            return None;
        }
        let turn = *self.turn();
        let open = match turn.slice {
            Some(_) if counts(turn.started_ns) => turn.idle.saturating_sub(turn.from),
            _ => 0,
        };
        Some(self.closed.load(Relaxed) + open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose counter the test sets: `sectors` of 512 bytes written.
    struct Disk(tempfile::NamedTempFile);

    impl Disk {
        fn set(&self, bytes: u64) {
            std::fs::write(self.0.path(), format!("0 0 0 0 0 0 {} 0\n", bytes / 512)).unwrap();
        }
    }

    fn disk() -> (Disk, SliceWrites) {
        let d = Disk(tempfile::NamedTempFile::new().unwrap());
        d.set(0);
        let w = SliceWrites::new(DiskWrites::of_stat_files([d.0.path()]));
        (d, w)
    }

    #[test]
    fn each_slice_counts_from_its_first_unit_to_its_last_units_end() {
        let (d, w) = disk();
        let all = |_| true;
        d.set(1024);
        w.started(1, 10, all);
        d.set(4096);
        w.idle();
        // Its units ran out for a moment and start again within the same slice.
        w.started(1, 11, all);
        d.set(5120);
        w.idle();
        // Another place's slice wrote meanwhile: not this place's.
        d.set(50 * 1024);
        w.started(3, 30, all);
        d.set(51 * 1024);
        assert_eq!(w.written(all), Some(4096), "the open slice counts up to its units' last end");
        w.idle();
        assert_eq!(w.written(all), Some(4096 + 1024));
    }

    #[test]
    fn slices_that_start_outside_the_window_do_not_count() {
        let (d, w) = disk();
        let window = |at| (20..=40).contains(&at);
        w.started(1, 10, window);
        d.set(2048);
        w.idle();
        w.started(3, 30, window);
        d.set(3072);
        w.idle();
        w.started(5, 50, window);
        d.set(8192);
        w.idle();
        assert_eq!(w.written(window), Some(1024));
    }

    #[test]
    fn disks_of_its_own_count_the_whole_window_other_places_slices_included() {
        let (d, _) = disk();
        let w = PlaceWrites::new(DiskWrites::of_stat_files([d.0.path()]), true);
        let PlaceWrites::Window(window) = &w else { panic!("disks of its own count by window") };
        d.set(1024);
        assert_eq!(w.written(|_| true), Some(0), "nothing counts before the window starts");
        window.start();
        d.set(8192);
        assert_eq!(w.written(|_| false), Some(7168), "an open window counts up to now, slices or not");
        window.end();
        d.set(64 * 1024);
        assert_eq!(w.written(|_| true), Some(7168), "writes after the window's end do not count");
    }

    #[test]
    fn without_disks_there_is_no_figure() {
        let w = SliceWrites::new(DiskWrites::default());
        w.started(0, 0, |_| true);
        w.idle();
        assert_eq!(w.written(|_| true), None);
        assert_eq!(PlaceWrites::new(DiskWrites::default(), true).written(|_| true), None);
    }
}
