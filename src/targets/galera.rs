//! A MariaDB Galera cluster that dbvs owns (`managed-galera[:N]`): N managed MariaDB
//! nodes on this machine, each on its own data directory (`node1`, `node2`, ... under the
//! cluster's), joined by Galera's replication over loopback. Node 1 bootstraps the
//! cluster; the others join it and receive its data by a state transfer (rsync). The
//! cluster is a server like the user's own: runs get logical copies, which the cluster
//! replicates to every node, and workers spread their connections over the nodes.

use super::managed_maria::ManagedMaria;
use super::{Binaries, ManagedServer};
use crate::sys::lease::{Lease, Step};
use crate::sys::Placement;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cluster sizes dbvs starts on one machine.
pub const NODES: std::ops::RangeInclusive<usize> = 2..=9;

/// How long a node may take to say it is in step with the cluster after it started.
const SYNC_WAIT: Duration = Duration::from_secs(120);

pub struct Galera {
    /// Node 1 first; they stop in reverse, node 1 last, so it stays safe to bootstrap.
    nodes: Vec<ManagedMaria>,
    data: PathBuf,
    /// Removes the nodes' write-set caches from a `gcache.dir` the user named, after the
    /// nodes (declared after them, so dropped after them).
    _caches: Lease,
}

pub fn default_data_dir() -> PathBuf {
    super::managed_maria::default_data_dir(&Binaries::Packaged).with_file_name("galera")
}

/// A free loopback port (released at once; the node binds it moments later).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Galera {
    /// Starts `nodes` nodes under `data` with `settings` on every one (a variant's TDE
    /// applies to every node) and waits until each is in step with the cluster.
    pub fn start(data: &Path, nodes: usize, settings: &[(String, String)], place: &Placement) -> Result<Self> {
        if !NODES.contains(&nodes) {
            bail!("a Galera cluster here has {} to {} nodes, e.g. managed-galera:3", NODES.start(), NODES.end());
        }
        let provider = ["/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .context("Galera's provider is not installed: install it with 'apt-get install galera-4 rsync'")?;
        crate::sys::require("rsync", "rsync")?;
        std::fs::create_dir_all(data).with_context(|| format!("cannot create data directory {}", data.display()))?;
        let data = data.canonicalize()?;
        let mut caches = Lease::new(&format!("Galera write-set caches of {}", data.display()))?;
        let cache_dir = user_cache_dir(settings);
        if let Some(dir) = cache_dir.as_deref().filter(|d| !d.is_dir()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create gcache.dir {}", dir.display()))?;
            super::managed_maria::give_to_server(dir)?;
        }
        let plan = Plan { data: &data, provider, cache_dir: cache_dir.as_deref(), settings, place };
        let mut nodes_started = vec![];
        let mut first_gcomm = String::new();
        for i in 0..nodes {
            let node = match plan.node(i, &mut first_gcomm, &mut caches) {
                // A joiner's state transfer can fail on a busy machine (or lose its port to
                // another process between choosing and binding it): once more, on new ports.
                Err(e) if i > 0 => {
                    eprintln!("Galera node {} did not join ({e:#}); starting it once more", i + 1);
                    plan.node(i, &mut first_gcomm, &mut caches)?
                }
                started => started?,
            };
            nodes_started.push(node);
        }
        Ok(Self { nodes: nodes_started, data, _caches: caches })
    }

    /// Every node's client port, node 1's first.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    pub fn version(&self) -> &str {
        &self.nodes[0].version
    }
}

/// What every node of a cluster starts with.
struct Plan<'a> {
    data: &'a Path,
    provider: &'a str,
    cache_dir: Option<&'a Path>,
    settings: &'a [(String, String)],
    place: &'a Placement,
}

impl Plan<'_> {
    /// Starts node `i` (node 1 bootstraps the cluster at `first_gcomm`, the others join it)
    /// on ports of its own and waits until it is in step.
    fn node(&self, i: usize, first_gcomm: &mut String, caches: &mut Lease) -> Result<ManagedMaria> {
        let (gcomm, ist, sst) = (free_port()?, free_port()?, free_port()?);
        let dir = self.data.join(format!("node{}", i + 1));
        let address = match i {
            0 => {
                *first_gcomm = format!("127.0.0.1:{gcomm}");
                bootstrappable(&dir)?;
                "gcomm://".to_string()
            }
            _ => format!("gcomm://{first_gcomm}"),
        };
        let mut node_settings: Vec<(String, String)> = [
            ("wsrep_on", "ON".to_string()),
            ("wsrep_provider", self.provider.to_string()),
            ("wsrep_cluster_address", address),
            ("wsrep_node_address", format!("127.0.0.1:{gcomm}")),
            (PROVIDER_OPTIONS, format!("gmcast.listen_addr=tcp://127.0.0.1:{gcomm};ist.recv_addr=127.0.0.1:{ist}")),
            ("wsrep_sst_method", "rsync".into()),
            ("wsrep_sst_receive_address", format!("127.0.0.1:{sst}")),
            // Reads wait for the writes the cluster has committed before them, so a
            // post-run check on any node sees every node's work.
            ("wsrep_sync_wait", "1".into()),
            ("binlog_format", "ROW".into()),
            ("innodb_autoinc_lock_mode", "2".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        merge_settings(&mut node_settings, self.settings);
        if let Some(dir) = self.cache_dir {
            // Nodes that share a cache directory need files of their own, also across
            // the clusters one process runs at once (an interleaved run's variants): the
            // node's group port is unique among the nodes running.
            let name = format!("dbvs-{}-{gcomm}-node{}.cache", std::process::id(), i + 1);
            caches.push(Step::RemoveFile { path: dir.join(&name) })?;
            merge_settings(&mut node_settings, &[(PROVIDER_OPTIONS.into(), format!("gcache.name={name}"))]);
        }
        let node = ManagedMaria::start(&Binaries::Packaged, &dir, None, &node_settings, self.place)
            .with_context(|| format!("Galera node {} did not start", i + 1))?;
        synced(&node).with_context(|| format!("Galera node {}", i + 1))?;
        Ok(node)
    }
}

/// Adds the user's settings to a node's. Galera's provider options are one setting, so the
/// user's (`gcache.size=1G`, say) are appended to the node's own, overriding any they repeat.
fn merge_settings(node: &mut Vec<(String, String)>, user: &[(String, String)]) {
    for (key, value) in user {
        let own = node.iter_mut().find(|(k, _)| k == PROVIDER_OPTIONS);
        match own {
            Some((_, options)) if key.replace('-', "_") == PROVIDER_OPTIONS => *options = format!("{options};{value}"),
            _ => node.push((key.clone(), value.clone())),
        }
    }
}

const PROVIDER_OPTIONS: &str = "wsrep_provider_options";

/// The `gcache.dir` of the user's provider options: where the write-set caches go instead of
/// each node's data directory (e.g. a tmpfs: Galera does not encrypt its cache, so with
/// MariaDB's TDE the replicated rows are plaintext there).
fn user_cache_dir(settings: &[(String, String)]) -> Option<PathBuf> {
    let options = settings.iter().filter(|(k, _)| k.replace('-', "_") == PROVIDER_OPTIONS);
    options
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|o| o.trim().strip_prefix("gcache.dir="))
        .next_back()
        .map(PathBuf::from)
}

/// Node 1 bootstraps the cluster every time; a cluster that was killed leaves it marked
/// unsafe to, which dbvs overrides: its nodes are never started elsewhere.
fn bootstrappable(node: &Path) -> Result<()> {
    let state = node.join("grastate.dat");
    if let Ok(text) = std::fs::read_to_string(&state) {
        std::fs::write(&state, text.replace("safe_to_bootstrap: 0", "safe_to_bootstrap: 1"))?;
    }
    Ok(())
}

/// Waits until `node` says it is in step with the cluster.
fn synced(node: &ManagedMaria) -> Result<()> {
    let t = Instant::now();
    loop {
        let state = node.status("wsrep_local_state_comment")?;
        if state == "Synced" {
            return Ok(());
        }
        if t.elapsed() > SYNC_WAIT {
            bail!("not in step with the cluster after {} s (state: {state}): {}", SYNC_WAIT.as_secs(), node.log_tail());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl ManagedServer for Galera {
    fn log_tail(&self) -> String {
        let tails = self.nodes.iter().enumerate().map(|(i, n)| format!("node {}: {}", i + 1, n.log_tail()));
        tails.collect::<Vec<_>>().join("; ")
    }

    fn restart(&self) -> Result<()> {
        bail!("a Galera cluster is not restarted between runs (its nodes would need a state transfer); drop --cold")
    }

    fn data_dir(&self) -> PathBuf {
        self.data.clone()
    }

    fn log_dir(&self) -> Option<PathBuf> {
        None
    }

    /// Node 1's.
    fn pid_file(&self) -> PathBuf {
        ManagedServer::pid_file(&self.nodes[0])
    }

    /// Every node's: the cluster's CPU is all of theirs.
    fn pid_files(&self) -> Vec<PathBuf> {
        self.nodes.iter().map(ManagedServer::pid_file).collect()
    }
}

impl Drop for Galera {
    fn drop(&mut self) {
        while let Some(node) = self.nodes.pop() {
            drop(node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_provider_options_follow_the_nodes_own() {
        let mut node = vec![(PROVIDER_OPTIONS.to_string(), "gmcast.listen_addr=tcp://127.0.0.1:1".to_string())];
        let user =
            [("wsrep-provider-options".into(), "gcache.size=1G".into()), ("max_connections".into(), "50".into())];
        merge_settings(&mut node, &user);
        assert_eq!(node[0].1, "gmcast.listen_addr=tcp://127.0.0.1:1;gcache.size=1G");
        assert_eq!(node[1], ("max_connections".to_string(), "50".to_string()));
        assert_eq!(user_cache_dir(&user), None);
        let memory = [(PROVIDER_OPTIONS.into(), "gcache.size=64M; gcache.dir=/dev/shm".into())];
        assert_eq!(user_cache_dir(&memory), Some(PathBuf::from("/dev/shm")));
    }
}
