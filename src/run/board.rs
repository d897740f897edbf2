//! Who is at work: each place's units in flight in an interleaved run, so that a variant
//! starts its slice only after the previous variant's last units have finished. Without
//! it, a slow variant's last units ran on into the next variant's slice: they counted for
//! the slow variant while the next one shared the machine with them. With 100 ms slices
//! (one thread, 1 ms against 25 ms of busy-wait per order) the ratio came out 5% high.
//!
//! In one process the counts are atomics in memory; processes that take turns with each
//! other (`run::start`) map one small file, `places` counters of four bytes.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

pub struct Board {
    slots: Slots,
    places: usize,
}

enum Slots {
    Local(Vec<AtomicU32>),
    /// The mapping stays alive as long as the pointer into it is used.
    Shared {
        _map: memmap2::MmapMut,
        base: *mut u32,
    },
}

// SAFETY: the shared slots are only ever touched as atomics, from any thread or process.
unsafe impl Send for Board {}
unsafe impl Sync for Board {}

impl Board {
    /// A board for the places of one process.
    pub fn local(places: usize) -> Self {
        Self { slots: Slots::Local((0..places).map(|_| AtomicU32::new(0)).collect()), places }
    }

    /// Writes the file a board shared between processes lives in, every place idle.
    pub fn create(path: &Path, places: usize) -> Result<()> {
        std::fs::write(path, vec![0u8; places * 4]).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Maps a board file that [`Board::create`] wrote.
    pub fn open(path: &Path, places: usize) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open the turns board {}", path.display()))?;
        if file.metadata()?.len() < places as u64 * 4 {
            bail!("the turns board {} is too short for {places} places", path.display());
        }
        // SAFETY: the file is ours (in the study's work directory) and every process that
        // maps it reads and writes it only through atomics.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        let base = map.as_mut_ptr().cast::<u32>();
        Ok(Self { slots: Slots::Shared { _map: map, base }, places })
    }

    fn slot(&self, place: usize) -> &AtomicU32 {
        assert!(place < self.places, "place {place} of {}", self.places);
        match &self.slots {
            Slots::Local(v) => &v[place],
            // SAFETY: the mapping is page-aligned, holds `places` counters (checked in
            // `open`) and lives as long as `self`.
            Slots::Shared { base, .. } => unsafe { AtomicU32::from_ptr(base.add(place)) },
        }
    }

    /// One more of `place`'s units is in flight; returns how many were before.
    pub fn enter(&self, place: usize) -> u32 {
        self.slot(place).fetch_add(1, SeqCst)
    }

    /// One of `place`'s units ended; returns how many were in flight before.
    pub fn leave(&self, place: usize) -> u32 {
        self.slot(place).fetch_sub(1, SeqCst)
    }

    /// Whether a unit of any place but `place` is still running.
    pub fn others_at_work(&self, place: usize) -> bool {
        (0..self.places).any(|p| p != place && self.slot(p).load(SeqCst) > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_mapping_one_board_file_see_each_others_units() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.board");
        Board::create(&path, 3).unwrap();
        let (a, b) = (Board::open(&path, 3).unwrap(), Board::open(&path, 3).unwrap());
        assert!(!a.others_at_work(0));
        b.enter(2);
        assert!(a.others_at_work(0) && a.others_at_work(1) && !a.others_at_work(2));
        b.leave(2);
        assert!(!a.others_at_work(0));
        assert!(Board::open(&path, 4).is_err(), "a board too short for the places is refused");
    }

    #[test]
    fn a_local_board_counts_each_place_on_its_own() {
        let board = Board::local(2);
        board.enter(0);
        board.enter(0);
        board.leave(0);
        assert!(board.others_at_work(1) && !board.others_at_work(0));
        board.leave(0);
        assert!(!board.others_at_work(1));
    }
}
