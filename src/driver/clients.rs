//! What remote client hosts did in a run (see `crate::remote`): a run's result carries it,
//! so it lives beside the result, below the remote module that fills it in.

use serde::{Deserialize, Serialize};

/// What one client host did in a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientRow {
    pub host: String,
    pub workers: usize,
    /// Units the host's workers finished in the measured window.
    pub units: u64,
    /// The host's dbvs process CPU over its window, as % of that host's cores: near 100
    /// would mean the client, not the database, set the pace.
    pub cpu_pct: f64,
    pub cores: usize,
    /// The host's clock minus the coordinator's, from the ping with the shortest round trip.
    pub clock_offset_ms: f64,
    pub rtt_ms: f64,
}

/// The client hosts' part of a run record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientsRecord {
    pub hosts: Vec<ClientRow>,
    /// The coordinator's own CPU over the window, as % of its cores.
    pub coordinator_cpu_pct: f64,
    /// The server's own transaction counters over the run, beside what the clients counted.
    pub server: Option<ServerTransactions>,
}

/// Transactions the server counted from just before the common start to just after the
/// last client finished (PostgreSQL: its database's `pg_stat_database`; MariaDB: the
/// server's `Handler_commit` and `Handler_rollback`), and the units the clients counted
/// over the same span, warm-up included. Every committed unit is at least one commit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerTransactions {
    pub commits: u64,
    pub rollbacks: u64,
    pub client_committed: u64,
    pub client_rolled_back: u64,
    /// Whether the server's counts are the whole server's (MariaDB), not the run's database's.
    #[serde(default)]
    pub server_wide: bool,
}

impl ClientsRecord {
    /// The hosts' part of a run of several instances, each driven by its own session with
    /// every host: per host, the workers, units and CPU add up (one host's sessions share
    /// its cores); the clock estimate is the one with the shortest round trip; the server's
    /// counts add up when each is its instance's database's own (a server-wide count already
    /// holds every instance, so there is no one figure to add). The coordinator is one
    /// process, so its CPU is the busiest window's.
    pub fn sum(parts: &[&ClientsRecord]) -> Option<ClientsRecord> {
        let (first, rest) = parts.split_first()?;
        let mut total = (*first).clone();
        for part in rest {
            for (row, other) in total.hosts.iter_mut().zip(&part.hosts) {
                row.workers += other.workers;
                row.units += other.units;
                row.cpu_pct += other.cpu_pct;
                if other.rtt_ms < row.rtt_ms {
                    (row.clock_offset_ms, row.rtt_ms) = (other.clock_offset_ms, other.rtt_ms);
                }
            }
            total.coordinator_cpu_pct = total.coordinator_cpu_pct.max(part.coordinator_cpu_pct);
            total.server = match (total.server, &part.server) {
                (Some(a), Some(b)) if !a.server_wide && !b.server_wide => Some(ServerTransactions {
                    commits: a.commits + b.commits,
                    rollbacks: a.rollbacks + b.rollbacks,
                    client_committed: a.client_committed + b.client_committed,
                    client_rolled_back: a.client_rolled_back + b.client_rolled_back,
                    server_wide: false,
                }),
                _ => None,
            };
        }
        Some(total)
    }
}
