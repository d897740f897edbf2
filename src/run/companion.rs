//! Companions: a second workload beside every instance of a run, each on a database of its
//! own (seed 004 added its database VMs in pairs with mail VMs, whose latency had an SLA of
//! its own). They start on the instances' barrier, measure in the same window and are
//! recorded apart, so the run's figures stay the instances'.

use super::load::Load;
use super::spec::{PacingSpec, RunSpec};
use super::{ensure_built, Instance};
use crate::driver::{Pacing, RunResult};
use crate::host::Env;
use crate::record::{InstanceRow, RunRecord};
use crate::targets::{BuildMeta, Target};
use anyhow::{bail, Result};

pub struct Companions {
    target: Box<dyn Target>,
    pub meta: BuildMeta,
    pub instances: Vec<Instance>,
    pub pacing: Pacing,
}

impl Companions {
    /// One companion per instance, on fresh copies of its pristine database (built when
    /// missing) and settled; `None` for a run without a companion.
    pub fn set_up(spec: &RunSpec) -> Result<Option<Self>> {
        let Some(c) = &spec.companion else { return Ok(None) };
        let (target, workload) = c.db.open(&[], None)?;
        if !workload.supports_instances() {
            bail!(
                "a companion runs beside instances, so it is a throughput workload ({}), not {}",
                crate::workloads::throughput_names().join(", "),
                workload.name()
            );
        }
        let meta = ensure_built(target.as_ref(), workload.as_ref())?;
        let mut instances = vec![(workload, target.fresh_copy()?)];
        for _ in 1..spec.instances {
            instances.push((c.db.workload()?, target.fresh_copy()?));
        }
        for (_, copy) in &instances {
            copy.settle()?;
        }
        // Its own threads and think time, in the run's warmup and window.
        let load =
            Load { duration: spec.pacing.load.duration, warmup: spec.pacing.load.warmup, ..c.pacing.load.clone() };
        let window = PacingSpec { load, ..c.pacing.clone() };
        let mut pacing = window.pacing(c.db.workload.seed);
        instances[0].0.adjust_pacing(&mut pacing);
        Ok(Some(Self { target, meta, instances, pacing }))
    }

    /// Each companion's row, with its post-run checks; its closing line printed.
    pub fn rows(&self, results: Vec<RunResult>, env: &Env, started_at: &str) -> Vec<InstanceRow> {
        let mut rows = Vec::new();
        for (((w, copy), result), i) in self.instances.iter().zip(results).zip(1..) {
            let checks = super::instances::checks_after(w.as_ref(), copy.as_ref(), &self.meta, &result);
            eprintln!("companion {i}: {}", w.final_line(&result));
            let (target, env) = (self.target.info(), env.clone());
            let record = RunRecord::new(w.as_ref(), target, &self.pacing, env, started_at.into(), result, checks);
            rows.push(super::instances::row(i, &record));
        }
        rows
    }
}
