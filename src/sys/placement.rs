//! Where a spawned server's processes run: the control groups they join and the CPUs they
//! may use. A run whose workers are pinned (see [`super::pin_thread`]) runs its managed
//! servers on fixed CPUs too, the same for every variant: left to the scheduler, the server
//! processes of each run settled on CPUs of their own choosing, and that choice, made anew
//! each run, set the run's throughput. In A/A studies of TPC-B on two managed PostgreSQL
//! servers (two workers each, this 2-vCPU VM) the per-block noise of TPS was 21-27% with
//! the servers free and 1.1-1.5% with every server process on one CPU (docs/methodology.md,
//! "The servers' CPUs").

use super::{allowed_cpus, worker_cpu};
use anyhow::Result;
use std::path::PathBuf;

/// What a managed server's processes join when they start.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// Control groups (a study variant's limits).
    pub cgroups: Vec<PathBuf>,
    /// The CPUs the server may use (none: the scheduler's choice). Within a control group's
    /// cpuset, those of them it allows, else its last.
    pub cpus: Vec<usize>,
}

impl Placement {
    /// Makes `cmd`'s process join the control groups, then take the CPUs, as it starts.
    pub fn on_spawn(&self, cmd: &mut std::process::Command) -> Result<()> {
        super::cgroup::join_on_spawn(cmd, &self.cgroups)?;
        pin_on_spawn(cmd, &self.cpus);
        Ok(())
    }

    /// Where this placement pins a server, what the kernel says `pid` may run on: " on CPUs
    /// 1" (from /proc, so a record cannot claim a pinning that did not happen); else nothing.
    pub fn said_of(&self, pid: Option<u32>) -> String {
        if self.cpus.is_empty() {
            return String::new();
        }
        let status = pid.and_then(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok()).unwrap_or_default();
        let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(str::trim);
        format!(" on CPUs {}", list.unwrap_or("/proc does not show"))
    }
}

/// The CPUs for a managed server beside `threads` pinned workers: those the workers leave
/// free, or, where they take every CPU, the last one (all the server's processes on one CPU:
/// the placement that measured steadiest).
pub fn server_cpus(threads: usize) -> Result<Vec<usize>> {
    let cpus = allowed_cpus()?;
    let workers: Vec<usize> = (0..threads).filter_map(|i| worker_cpu(&cpus, i)).collect();
    let free: Vec<usize> = cpus.iter().copied().filter(|c| !workers.contains(c)).collect();
    Ok(if free.is_empty() { cpus.last().copied().into_iter().collect() } else { free })
}

/// Makes `cmd`'s process run on `cpus` (those of them its control groups allow, else the
/// last CPU they allow) from its start; its children inherit that.
fn pin_on_spawn(cmd: &mut std::process::Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt;
    if cpus.is_empty() {
        return;
    }
    let cpus = cpus.to_vec();
    // SAFETY: between fork and exec only sched_getaffinity and sched_setaffinity run (both
    // async-signal-safe system calls) on sets on the stack; `cpus` was allocated before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut allowed) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut wanted: libc::cpu_set_t = std::mem::zeroed();
            let mut any = false;
            for &c in &cpus {
                if c < libc::CPU_SETSIZE as usize && libc::CPU_ISSET(c, &allowed) {
                    libc::CPU_SET(c, &mut wanted);
                    any = true;
                }
            }
            if !any {
                match (0..libc::CPU_SETSIZE as usize).rev().find(|&c| libc::CPU_ISSET(c, &allowed)) {
                    Some(last) => libc::CPU_SET(last, &mut wanted),
                    None => return Ok(()),
                }
            }
            if libc::sched_setaffinity(0, size, &wanted) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_takes_the_cpus_the_workers_leave_else_the_last() {
        let cpus = allowed_cpus().unwrap();
        let last = *cpus.last().unwrap();
        assert_eq!(server_cpus(cpus.len()).unwrap(), [last], "every CPU has a worker");
        assert_eq!(server_cpus(cpus.len() * 2).unwrap(), [last]);
        if cpus.len() > 1 {
            assert_eq!(server_cpus(1).unwrap(), cpus[1..], "the CPUs the one worker leaves");
        }
    }

    #[test]
    fn a_spawned_process_runs_on_the_cpus_it_is_given() {
        let cpus = allowed_cpus().unwrap();
        let last = *cpus.last().unwrap();
        let place = Placement { cgroups: vec![], cpus: vec![last] };
        let mut cmd = std::process::Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"]);
        place.on_spawn(&mut cmd).unwrap();
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert_eq!(out.split_whitespace().last(), Some(last.to_string().as_str()), "{out}");
        // A CPU it may not use gives way to the last it may.
        let mut cmd = std::process::Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"]);
        Placement { cgroups: vec![], cpus: vec![libc::CPU_SETSIZE as usize + 1] }.on_spawn(&mut cmd).unwrap();
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert_eq!(out.split_whitespace().last(), Some(last.to_string().as_str()), "{out}");
    }
}
