//! `cipher`: in-memory AES throughput at one buffer size ([`crate::cipher`]) as a study
//! workload. It touches no storage; the variant's environment (AES-NI masked or not) is
//! what it measures. `dbvs cipher` gives the full table over sizes and both AES-NI settings.

use super::{Measure, Standalone, StandaloneRun, WorkloadSpec};
use crate::cipher::{self, Algo};
use crate::driver::RunStatus;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The cipher workload's options.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// aes-256-xts (disk encryption's), aes-256-gcm or aes-256-cbc.
    pub cipher: Algo,
}

pub struct Aes {
    algo: Algo,
    size: (&'static str, usize),
    runs: usize,
}

impl Aes {
    pub fn new(spec: &WorkloadSpec, o: &Options) -> Result<Self> {
        Ok(Self {
            algo: o.cipher,
            size: cipher::parse_size(spec.size.as_deref().unwrap_or("1MB"))?,
            runs: spec.repeat_or(3)? as usize,
        })
    }
}

impl Standalone for Aes {
    fn measures(&self) -> Vec<Measure> {
        vec![cipher::throughput(&[])]
    }

    fn leaves_data(&self) -> bool {
        false
    }

    fn run(&self, _dir: Option<&Path>, threads: usize, _keep: bool) -> Result<StandaloneRun> {
        let params = serde_json::json!({
            "cipher": self.algo.name(), "size": self.size.0, "runs": self.runs, "threads": threads,
        });
        let (status, series) = match cipher::measure_here(&[self.algo], &[self.size], threads, self.runs) {
            Ok(series) => (RunStatus::Completed, series),
            Err(e) if e.is::<crate::interrupt::Interrupted>() => (RunStatus::Interrupted, vec![]),
            Err(e) => (RunStatus::Failed(format!("{e:#}")), vec![]),
        };
        let headline = cipher::throughput(&series);
        Ok(StandaloneRun {
            status,
            params,
            measures: vec![headline.clone()],
            headline,
            metrics: cipher::metrics(&series),
        })
    }
}
