//! Taking up a study that did not finish (`dbvs study FILE --resume ID`): the runs it
//! stored are loaded back into the variants' per-block values, so the study goes on from
//! the first block it did not complete, and its report covers every block.

use super::measures::Measure;
use super::Active;
use crate::record::RunRecord;
use crate::report::RunRow;
use crate::status::Status;
use crate::store::RunRow as StoredRun;

/// Loads `stored` runs into `active`; returns their report rows and the first block to run.
/// A block cut off part-way is run again whole (its runs are left out), so every counted
/// block pairs every variant.
pub(super) fn preload(active: &mut [Active], measures: &[Measure], stored: &[StoredRun]) -> (Vec<RunRow>, usize) {
    let Some(last) = stored.iter().filter_map(|r| r.block).max() else { return (vec![], 0) };
    // The last block may have been cut off mid-way; it is run again, so its runs are dropped.
    let whole = block_is_whole(stored, last, active, measures);
    let complete = |b: i64| b < last || whole;
    let first = if complete(last) { last as usize + 1 } else { last as usize };
    let mut rows = Vec::new();
    for run in stored.iter().filter(|r| r.block.is_some_and(complete)) {
        let (Some(block), Some(variant)) = (run.block, run.variant.as_deref()) else { continue };
        let Some(a) = active.iter_mut().find(|a| a.cfg.name == variant) else { continue };
        let block = block as usize;
        let record: Option<RunRecord> = run.record_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
        if run.status == Status::Failed {
            a.failed.get_or_insert_with(|| run.cause.clone().unwrap_or_else(|| "failed".into()));
        }
        for m in measures.iter().filter(|m| m.workload == run.workload) {
            let per_block = a.values.entry(m.key()).or_default();
            per_block.resize(per_block.len().max(block + 1), None);
            per_block[block] = record.as_ref().filter(|r| r.counts()).and_then(|r| r.measure(&m.name));
        }
        let at = (run.id, block, variant, run.workload.as_str());
        rows.push(match &record {
            Some(r) => super::row_of(at, r),
            None => super::failed_row(at, run.cause.clone().unwrap_or_default()),
        });
        if let Some(r) = record {
            a.records.push((run.workload.clone(), r));
        }
    }
    (rows, first)
}

/// Whether block `b` holds a run of every workload on every variant that had not failed
/// before it.
fn block_is_whole(stored: &[StoredRun], b: i64, active: &[Active], measures: &[Measure]) -> bool {
    let labels: std::collections::BTreeSet<&str> = measures.iter().map(|m| m.workload.as_str()).collect();
    let failed_before = |v: &str| {
        stored
            .iter()
            .any(|r| r.variant.as_deref() == Some(v) && r.block.is_some_and(|x| x < b) && r.status == Status::Failed)
    };
    active.iter().filter(|a| !failed_before(&a.cfg.name)).all(|a| {
        labels.iter().all(|l| {
            stored.iter().any(|r| r.block == Some(b) && r.variant.as_deref() == Some(&a.cfg.name) && r.workload == *l)
        })
    })
}
