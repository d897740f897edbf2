//! Remote drivers: a run's workers on other hosts (`--clients`), so the machine under test
//! runs only the database and one host's cores no longer cap the load.
//!
//! The coordinator (the `dbvs run` process) starts `dbvs agent` on each client host over
//! OpenSSH, with the user's own keys and known hosts: dbvs opens no port and stores no
//! credential. The two speak typed JSON lines over the session's stdin and stdout (this
//! module's [`ToAgent`] and [`FromAgent`]): a hello with the versions, clock pings, the job
//! (the workload and the slice of the workers the host runs), a ready once every worker is
//! connected, a common start, then per-interval histograms and the host's whole result,
//! which the coordinator merges exactly (histograms, never averaged percentiles).

mod agent;
mod fleet;
mod merge;

pub use agent::main as agent_main;
pub use fleet::Fleet;

pub use crate::driver::{ClientRow, ClientsRecord, ServerTransactions};
use crate::driver::{FromStart, IntervalSample, Measured, Pacing, RunStatus};
use crate::targets::BuildMeta;
use crate::workloads::WorkloadSpec;
use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Raised whenever a message changes shape: a coordinator and an agent of different
/// protocols refuse each other at the hello.
pub const PROTOCOL: u32 = 1;

/// The client hosts of a run, as `--clients` or a study's `[clients]` give them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientsSpec {
    /// `[user@]host` as ssh takes it (a name from the user's ssh config works too).
    pub hosts: Vec<String>,
    /// The dbvs program on the client hosts.
    #[serde(default = "default_dbvs")]
    pub dbvs: String,
    /// An ssh configuration file to use instead of the user's (`ssh -F`).
    #[serde(default)]
    pub ssh_config: Option<PathBuf>,
}

impl ClientsSpec {
    /// Whether these hosts can drive the servers of a study's or a capacity search's target:
    /// managed PostgreSQL instances that listen on `listen`, an address they reach.
    pub fn reach(&self, engine: crate::targets::Engine, listen: Option<&str>) -> anyhow::Result<()> {
        if engine != crate::targets::Engine::Postgres || listen.is_none() {
            anyhow::bail!(
                "[clients] needs servers the hosts reach: [target] engine = \"postgres\" with listen = \"ADDR\", an address of this machine they reach"
            );
        }
        if self.hosts.is_empty() {
            anyhow::bail!("[clients] hosts is empty; name them as hosts = [\"user@host1\", \"user@host2\"]");
        }
        Ok(())
    }
}

/// The cross-check: every unit the clients counted as committed is at least one commit
/// the server counted, so fewer commits mean the clients' figures are not the server's.
pub fn server_check(record: &ClientsRecord) -> crate::workloads::Check {
    let name = "the server counted what the clients counted".into();
    match &record.server {
        Some(s) => crate::workloads::Check {
            name,
            ok: s.commits >= s.client_committed,
            detail: format!(
                "server: {} commits, {} rollbacks; clients: {} committed units, {} rolled back",
                s.commits, s.rollbacks, s.client_committed, s.client_rolled_back
            ),
        },
        None => crate::workloads::Check {
            name,
            ok: false,
            detail: "the server's transaction counters could not be read".into(),
        },
    }
}

fn default_dbvs() -> String {
    "dbvs".into()
}

/// What the coordinator sends an agent.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "to_agent", rename_all = "snake_case")]
pub enum ToAgent {
    Ping,
    Job(Box<Job>),
    /// Start the units at this instant of the agent's own clock (ns since the epoch).
    Start {
        at_unix_ns: u64,
    },
    /// Stop now (the run was interrupted, or another host was lost).
    Stop,
}

/// One host's share of a run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    pub workload: WorkloadSpec,
    /// How to reach the run's database: the client environment its engine's tools take
    /// (`PGHOST`, ... and the password, which travels only inside the ssh session).
    pub database: Vec<(String, String)>,
    pub meta: BuildMeta,
    /// The host's pacing: its threads, and the run's warm-up, duration and seed.
    pub pacing: Pacing,
    /// The index of the host's first worker among all of the run's.
    pub first_worker: usize,
}

/// What an agent sends the coordinator.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "from_agent", rename_all = "snake_case")]
pub enum FromAgent {
    Hello {
        version: String,
        protocol: u32,
        cores: usize,
    },
    Pong {
        unix_ns: u64,
    },
    /// Every worker is connected (or failed to): waiting for the start.
    Ready,
    WindowStart,
    Interval {
        sample: IntervalSample,
        latencies: WireHistogram,
        warmup: bool,
    },
    WindowEnd,
    Done(Box<Shard>),
    /// The job could not start (the database unreachable from this host, a bad workload).
    Failed {
        cause: String,
    },
}

/// One host's whole result.
#[derive(Debug, Serialize, Deserialize)]
pub struct Shard {
    pub status: RunStatus,
    pub elapsed_s: f64,
    pub measured: Measured,
    pub unit_latency: WireHistogram,
    pub op_latency: Vec<WireHistogram>,
    pub from_start: FromStart,
    pub process_cpu_pct: f64,
}

/// A histogram as it travels: HDR's V2 deflate encoding, in base64.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireHistogram(String);

impl WireHistogram {
    pub fn of(h: &Histogram<u64>) -> Self {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).expect("a histogram serializes into memory");
        Self(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn histogram(&self) -> Result<Histogram<u64>> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(&self.0).context("a histogram's base64")?;
        Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| anyhow::anyhow!("a histogram's encoding: {e:?}"))
    }
}

/// The version an agent and its coordinator must share.
fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Nanoseconds since the epoch on this host's clock.
fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_travel_whole() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in [1, 250, 7_000, 7_001, 90_000_000] {
            h.record(v).unwrap();
        }
        let back = WireHistogram::of(&h).histogram().unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
        assert!(WireHistogram("not base64!".into()).histogram().is_err());
    }

    #[test]
    fn instances_add_up_per_host() {
        let part = |units, cpu_pct, rtt_ms, commits| ClientsRecord {
            hosts: ["a", "b"]
                .map(|host| ClientRow {
                    host: host.into(),
                    workers: 2,
                    units,
                    cpu_pct,
                    cores: 2,
                    clock_offset_ms: rtt_ms * 10.0,
                    rtt_ms,
                })
                .to_vec(),
            coordinator_cpu_pct: cpu_pct,
            server: Some(ServerTransactions {
                commits,
                rollbacks: 1,
                client_committed: units * 2,
                client_rolled_back: 1,
                server_wide: false,
            }),
        };
        let (one, two) = (part(100, 5.0, 0.3, 210), part(50, 3.0, 0.2, 101));
        let sum = ClientsRecord::sum(&[&one, &two]).unwrap();
        let a = &sum.hosts[0];
        assert_eq!((a.workers, a.units, a.cpu_pct), (4, 150, 8.0));
        assert_eq!((a.clock_offset_ms, a.rtt_ms), (2.0, 0.2), "the estimate with the shortest round trip");
        assert_eq!(sum.coordinator_cpu_pct, 5.0);
        let server = sum.server.unwrap();
        assert_eq!((server.commits, server.client_committed, server.rollbacks), (311, 300, 2));
        let unread = ClientsRecord { server: None, ..two };
        assert!(ClientsRecord::sum(&[&one, &unread]).unwrap().server.is_none(), "a sum with a part unread is unread");
        let wide = |r: &ClientsRecord| ClientsRecord {
            server: r.server.clone().map(|s| ServerTransactions { server_wide: true, ..s }),
            ..r.clone()
        };
        assert!(ClientsRecord::sum(&[&wide(&one), &wide(&one)]).unwrap().server.is_none(), "a server-wide count");
        assert!(ClientsRecord::sum(&[]).is_none());
    }

    #[test]
    fn messages_are_tagged_json_lines() {
        let line = serde_json::to_string(&ToAgent::Start { at_unix_ns: 5 }).unwrap();
        assert_eq!(line, r#"{"to_agent":"start","at_unix_ns":5}"#);
        let hello: FromAgent =
            serde_json::from_str(r#"{"from_agent":"hello","version":"0.1.0","protocol":1,"cores":2}"#).unwrap();
        assert!(matches!(hello, FromAgent::Hello { protocol: 1, cores: 2, .. }));
    }
}
