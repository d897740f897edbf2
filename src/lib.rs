//! dbvs answers "what does this change cost my database?" by running database workloads
//! against targets and configurations, and reporting what changed with honest statistics.

pub mod capacity;
pub mod cipher;
pub mod cli;
pub mod driver;
pub mod host;
pub mod interrupt;
#[cfg(test)]
mod layers;
pub mod measure;
pub mod openmetrics;
pub mod record;
#[cfg(test)]
mod reference_docs;
pub mod remote;
pub mod report;
pub mod run;
pub mod stats;
pub mod status;
pub mod store;
pub mod study;
pub mod sys;
pub mod targets;
pub mod telemetry;
pub mod variants;
pub mod workloads;
