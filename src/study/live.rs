//! What a study exposes live (`dbvs study --metrics-addr`): its progress after every block,
//! each comparison's current interval width and each variant's mean so far, per measure.
//! The runs in progress are child processes; each publishes its report intervals' figures
//! (`dbvs_run_*`, labelled by variant) to a file that the study's endpoint merges in.

use super::measures::Measure;
use super::Active;
use crate::openmetrics::{gauge, Exporter, Family};

const BLOCKS: Family = gauge("dbvs_study_blocks_completed", "Blocks the study has completed.");
const BLOCK_SECONDS: Family = gauge("dbvs_study_block_seconds", "Wall time of the last block.");
const RUNNING: Family = gauge("dbvs_study_running", "1 while the study runs blocks, 0 when it has ended.");
const HALF_WIDTH: Family =
    gauge("dbvs_study_ci_half_width_ratio", "Each comparison's CI half-width, relative to its ratio.");
const MEAN: Family = gauge("dbvs_study_mean", "Each variant's mean of each measure over its completed blocks.");

/// Publishes the study's state after a block.
pub fn block_done(
    e: &Exporter,
    blocks: usize,
    seconds: f64,
    widths: &[super::summary::Width],
    active: &[Active],
    measures: &[Measure],
) {
    e.set(RUNNING, &[], 1.0);
    e.set(BLOCKS, &[], blocks as f64);
    e.set(BLOCK_SECONDS, &[], seconds);
    for w in widths.iter().filter(|w| w.half_width.is_finite()) {
        e.set(HALF_WIDTH, &[("comparison", &w.name)], w.half_width);
    }
    for a in active {
        for m in measures {
            let done: Vec<f64> = a.values.get(&m.key()).into_iter().flatten().flatten().copied().collect();
            if !done.is_empty() {
                let key = m.key();
                e.set(MEAN, &[("variant", &a.cfg.name), ("measure", &key)], crate::stats::mean(&done));
            }
        }
    }
}

/// Publishes that the study has ended.
pub fn ended(e: &Exporter) {
    e.set(RUNNING, &[], 0.0);
}
