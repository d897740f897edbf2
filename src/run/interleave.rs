//! An interleaved run: every variant's database set up at once, their workers taking
//! turns in slices ([`super::slices`]), one record per variant. The study's precision comes
//! from here: two variants measured in the same seconds share the machine's noise. With
//! `turns` the schedule is shared with other run processes ([`super::start`]).

use super::board::Board;
use super::slices::Slices;
use super::{exit_code, keep_in_store, measure, write_record, RunSpec, SetUp};
use crate::driver::{self, RunStatus};
use crate::record::RunRecord;
use crate::store::Store;
use crate::sys::create_output;
use anyhow::Result;
use indicatif::ProgressBar;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

/// Runs `spec`'s variants interleaved; the `--json` file holds their records as an array,
/// `spec.db`'s first.
pub fn run(spec: &RunSpec) -> Result<ExitCode> {
    let sides = spec.sides();
    for side in &sides {
        side.check()?;
    }
    if let Some(turns) = &spec.turns {
        turns.check(sides.len())?;
    }
    if spec.instances > 1 {
        anyhow::bail!("an interleaved run measures one database per variant; it cannot also run --instances");
    }
    if spec.clients.is_some() {
        anyhow::bail!(
            "an interleaved run's variants take turns inside one process; drive it from this host (no --clients), \
             or run each variant on its own with --clients"
        );
    }
    let json_out = spec.json.as_deref().map(create_output).transpose()?;
    let mut memory = super::memory_limit(spec)?;
    let mut store = spec.store.then(|| Store::open(&crate::store::default_path())).transpose()?;
    let mut sets = Vec::new();
    for side in &sides {
        match SetUp::new(side, memory.as_mut(), true) {
            Ok(set) => sets.push(set),
            Err(e) => {
                if let (Some(store), false) = (&store, e.is::<crate::interrupt::Interrupted>()) {
                    let _ = store.add_failed_run(None, side.db.workload.name(), &format!("{e:#}"));
                }
                if let Some(f) = json_out {
                    let records: Vec<RunRecord> =
                        sides.iter().map(|s| super::failed_record(s, &e)).collect::<Result<_>>()?;
                    write_record(f, spec, &records)?;
                }
                return Err(e);
            }
        }
    }
    let mut records = measure_all(spec, &sides, &sets)?;
    if let Some(m) = &memory {
        for r in records.iter_mut().filter(|r| r.limits.is_none()) {
            r.limits = Some(m.record());
        }
    }
    for r in &records {
        super::summary::print(r, &[]);
    }
    // The records are safe before anything else can fail.
    if let Some(f) = json_out {
        write_record(f, spec, &records)?;
    }
    if let Some(store) = &mut store {
        for r in &records {
            keep_in_store(store, r, spec.json.as_deref())?;
        }
    }
    for (side, set) in sides.iter().zip(sets.iter_mut()) {
        if let Some(dest) = &side.keep_db {
            let (_, copy) = set.instances.swap_remove(0);
            copy.keep(dest)?;
        }
    }
    // The worst outcome decides: a failed or interrupted side fails the comparison.
    let worst = records.iter().find(|r| r.status != RunStatus::Completed).unwrap_or(&records[0]);
    Ok(exit_code(worst))
}

/// Drives every side at once in slices; returns each side's record.
fn measure_all(spec: &RunSpec, sides: &[RunSpec], sets: &[SetUp]) -> Result<Vec<RunRecord>> {
    let seed = spec.db.workload.seed;
    // The variants take turns on the same CPUs: worker i of each on the i-th.
    let pacings: Vec<driver::Pacing> = sides
        .iter()
        .zip(sets.iter())
        .map(|(side, set)| driver::Pacing { pin_workers: true, ..set.pacing(side, seed) })
        .collect();
    let (places, of, board) = match &spec.turns {
        Some(t) => (t.places.clone(), t.of, Board::open(&t.board, t.of)?),
        None => ((0..sets.len()).collect(), sets.len(), Board::local(sets.len())),
    };
    let start = match spec.turns {
        Some(_) => super::start::ready_and_wait()?,
        None => Instant::now(),
    };
    let started_at = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    // One sampler watches every side's disks and servers: the machine they share. Each
    // side's record keeps its own storage layers and the disks under them (on the RAM disk
    // model each side has a disk of its own; its own disk writes are counted per side, by
    // `slices`).
    let watches: Vec<crate::targets::Watch> = sets.iter().map(|set| set.target.watch()).collect();
    let own_devices: Vec<_> = watches.iter().map(|w| crate::telemetry::devices::devices(&w.volumes)).collect();
    let sampler = super::sampler(spec, crate::targets::Watch::merged(&watches))?;
    // The slices start where the measured window does; the warm-up alternates too.
    let mut slices =
        Slices::new(of, spec.slice, start + pacings[0].warmup, spec.slice_seed, board).with_shares(&spec.slice_shares);
    for (watch, &place) in watches.iter().zip(&places) {
        let devices = crate::telemetry::devices::written_devices(&watch.volumes);
        let disks = crate::sys::disk_writes::DiskWrites::open(&devices);
        slices = slices.with_disks(place, disks, spec.disks_of_their_own);
    }
    let bar = ProgressBar::hidden();
    let live = super::live::Live::of(spec)?;
    let live = &live;
    let servers: Vec<Vec<PathBuf>> = watches.into_iter().map(|w| w.server_pid_files).collect();
    let results: Vec<driver::RunResult> = std::thread::scope(|s| {
        let handles: Vec<_> = sets
            .iter()
            .zip(&pacings)
            .enumerate()
            .map(|(i, (set, pacing))| {
                let (sampler, slices, bar, server) = (&sampler, &slices, &bar, &servers[i][..]);
                let place = places[i];
                let (w, copy) = &set.instances[0];
                s.spawn(move || {
                    let bar = (i == 0).then_some(bar);
                    let side = super::Placement {
                        turn: Some((slices, place)),
                        daemons: &sides[i].db.fuse_daemons,
                        server,
                        disks: None,
                        live: live.as_ref().map(|l| (l, i)),
                        remote: None,
                    };
                    measure(w.as_ref(), copy.as_ref(), &set.meta, pacing, sampler, bar, side)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    // The machine during the run, which every side shared.
    let telemetry = sampler.finish(None);
    let mut records = Vec::new();
    for ((((set, result), pacing), own), &place) in sets.iter().zip(results).zip(&pacings).zip(own_devices).zip(&places)
    {
        let (mut side, _) = set.records(vec![result], pacing, &started_at);
        let mut record = side.remove(0);
        record.telemetry = Some(telemetry.for_side(own));
        record.turn_starts = slices.turn_starts(place);
        records.push(record);
    }
    Ok(records)
}
