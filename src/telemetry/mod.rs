//! Telemetry: what the machine did while a run ran. A sampler thread reads raw counters
//! every interval (1 s by default) and stores per-interval rates: system CPU (user, system,
//! iowait, steal), the CPU of the database server's processes and of dbvs, context
//! switches, memory, PSI pressure, iostat's figures for the devices under the data
//! directory ([`devices`]), and power where a source exists ([`power`]).
//!
//! Summaries average the samples of the measurement window, and of its last N minutes (seed
//! 000's "last 10 minutes of peak"). The sampler measures its own CPU time, so its overhead
//! is in every record.

pub mod devices;
mod keep;
pub mod power;
mod proc;

pub use keep::average;
pub use proc::DiskRates;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Options {
    pub interval: Duration,
    pub power: power::PowerSpec,
    /// How long to read idle power before the load starts (only with a power source).
    pub idle: Duration,
    /// The volumes whose devices to watch, by role ("data", "log"), each with a directory on it.
    pub volumes: Vec<(String, PathBuf)>,
    /// A managed server's pid files (a cluster's, one per node), read at every sample
    /// (servers restart on cold runs); none without one.
    pub server_pid_files: Vec<PathBuf>,
    /// What to say about server CPU when there is no pid file.
    pub server_note: &'static str,
    pub peak_minutes: f64,
}

/// Averages over an interval (or over many, in summaries). CPU is % of all cores for the
/// system, % of one core for processes (a server using two cores shows 200%).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds from the sampler's start to the interval's end (in summaries: the seconds covered).
    pub t_s: f64,
    pub cpu_busy_pct: f64,
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
    pub cpu_steal_pct: f64,
    pub ctxt_per_s: f64,
    pub mem_available_mb: f64,
    pub dirty_mb: f64,
    pub psi_cpu_some_pct: f64,
    pub psi_io_some_pct: f64,
    pub psi_io_full_pct: f64,
    pub psi_memory_some_pct: f64,
    pub dbvs_cpu_pct: f64,
    pub server_cpu_pct: Option<f64>,
    pub disks: BTreeMap<String, DiskRates>,
    /// Traffic per network interface (loopback included: a local client's traffic is there).
    #[serde(default)]
    pub net: BTreeMap<String, proc::NetRates>,
    pub watts: Option<f64>,
}

impl Sample {
    /// Megabits per second received and sent over every interface with traffic.
    pub fn net_total(&self) -> (f64, f64) {
        self.net.values().fold((0.0, 0.0), |(rx, tx), r| (rx + r.rx_mbit_s, tx + r.tx_mbit_s))
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PowerReport {
    /// The source, or "unavailable".
    pub source: String,
    /// Average watts before the load started.
    pub idle_w: Option<f64>,
    /// Average watts over the measurement window.
    pub window_w: Option<f64>,
    /// The headline metric per watt of window power (e.g. OPM/W), idle not subtracted.
    pub per_watt: Option<f64>,
    pub per_watt_unit: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Telemetry {
    pub interval_s: f64,
    pub layers: Vec<devices::Layer>,
    pub devices: Vec<String>,
    pub server_cpu: String,
    /// The run's samples, warm-up included; a long run's are merged in pairs as they
    /// accumulate, so each is the mean of 2^`series_halvings` intervals.
    pub samples: Vec<Sample>,
    #[serde(default)]
    pub series_halvings: u32,
    pub window: Option<Sample>,
    pub peak_tail: Option<Sample>,
    pub peak_tail_minutes: f64,
    pub power: PowerReport,
    /// The sampler thread's CPU time as % of one core.
    pub sampler_cpu_pct: f64,
}

impl Telemetry {
    /// The machine's figures as measures a study can pair when each variant has the
    /// machine to itself (runs alone, not interleaved, where the machine is shared): the
    /// system's CPU busy % over the window (seed 000's CPU), and with a power source
    /// (`power`) the window's watts and work per watt (seed 001). Declared, without
    /// values, when there is no telemetry. With a window longer than `--peak-minutes`
    /// (default 10), also the CPU busy % over its last minutes (seed 000's "last 10 minutes
    /// of peak").
    pub fn measures(t: Option<&Self>, power: bool) -> Vec<crate::measure::Measure> {
        use crate::measure::Measure;
        let window = t.and_then(|t| t.window.as_ref());
        let mut out = vec![Measure::cost("system CPU busy %", "%", window.map(|w| w.cpu_busy_pct))];
        // Seed 000's CPU figure: the window's last minutes, where the run is at its peak.
        let tail = t.and_then(|t| t.peak_tail.as_ref());
        out.push(Measure::cost("system CPU busy % at the end", "%", tail.map(|w| w.cpu_busy_pct)));
        if power {
            let p = t.map(|t| &t.power);
            out.push(Measure::cost("power", "W", p.and_then(|p| p.window_w)));
            out.push(Measure {
                name: "work per watt".into(),
                unit: "per W".into(),
                higher_is_better: true,
                value: p.and_then(|p| p.per_watt),
                cost: false,
            });
        }
        out
    }

    /// One side's view of a run several shared (an interleaved run's sampler watches every
    /// side's volumes): the side's own storage layers (`devices::devices` of its volumes) and
    /// only the disks under them; the machine-wide figures as they are.
    pub fn for_side(&self, (layers, devices): (Vec<devices::Layer>, Vec<String>)) -> Telemetry {
        let mut t = self.clone();
        let own = |s: &mut Sample| s.disks.retain(|d, _| devices.contains(d));
        t.samples.iter_mut().chain(t.window.iter_mut()).chain(t.peak_tail.iter_mut()).for_each(own);
        (t.layers, t.devices) = (layers, devices);
        t
    }
}

/// Raw counters at one instant.
struct Reading {
    at: Instant,
    stat: proc::Stat,
    psi: [(u64, u64); 3],
    disks: BTreeMap<String, proc::DiskCounters>,
    net: BTreeMap<String, (u64, u64)>,
    own_ticks: u64,
    server_ticks: Option<BTreeMap<u32, u64>>,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// CPU ticks of `root` and all its descendants, per pid.
fn tree_ticks(root: u32) -> BTreeMap<u32, u64> {
    let procs: Vec<(u32, u64, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let (ticks, ppid) = proc::parse_pid_cpu(&read(&format!("/proc/{pid}/stat")))?;
            Some((pid, ticks, ppid))
        })
        .collect();
    let mut tree: BTreeMap<u32, u64> = procs.iter().filter(|p| p.0 == root).map(|p| (p.0, p.1)).collect();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ticks, ppid) in &procs {
            if ppid == parent && tree.insert(pid, ticks).is_none() {
                frontier.push(pid);
            }
        }
    }
    tree
}

/// The processes of the servers whose pid files are `pid_files` (a cluster's nodes): each
/// server and its descendants (PostgreSQL's backends); none for a missing file.
pub fn server_processes(pid_files: &[PathBuf]) -> Vec<u32> {
    server_ticks(pid_files).into_keys().collect()
}

/// CPU ticks of every process of the servers whose pid files are `pid_files`, per pid.
fn server_ticks(pid_files: &[PathBuf]) -> BTreeMap<u32, u64> {
    pid_files.iter().filter_map(|f| server_pid(f)).flat_map(tree_ticks).collect()
}

/// CPU time the processes `pids` have used so far: every live thread's (the scheduler's
/// nanosecond account: a short window's few milliseconds are not rounded to ticks), and
/// that of their children that ended (their parents' account, in ticks). PostgreSQL's
/// backends end with their connections, and in a fixed-work run they do before its window
/// does: without theirs, the window's end could count less than its start.
pub fn cpu_time(pids: &[u32]) -> Duration {
    let thread = |path: std::path::PathBuf| -> u64 {
        let text = std::fs::read_to_string(path.join("schedstat")).unwrap_or_default();
        text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    let ns: u64 = pids
        .iter()
        .filter_map(|pid| std::fs::read_dir(format!("/proc/{pid}/task")).ok())
        .flat_map(|tasks| tasks.flatten().map(|t| thread(t.path())))
        .sum();
    let reaped: u64 =
        pids.iter().filter_map(|pid| proc::parse_reaped_children_cpu(&read(&format!("/proc/{pid}/stat")))).sum();
    Duration::from_nanos(ns) + Duration::from_secs_f64(reaped as f64 / ticks_per_s())
}

/// The pid on the first line of a server's pid file.
fn server_pid(pid_file: &std::path::Path) -> Option<u32> {
    read(&pid_file.display().to_string()).lines().next()?.trim().parse().ok()
}

impl Reading {
    fn take(devices: &[String], pid_files: &[PathBuf]) -> Self {
        let all = proc::parse_diskstats(&read("/proc/diskstats"));
        let server = (!pid_files.is_empty()).then(|| server_ticks(pid_files));
        Reading {
            at: Instant::now(),
            stat: proc::parse_stat(&read("/proc/stat")),
            psi: ["cpu", "io", "memory"].map(|k| proc::parse_psi(&read(&format!("/proc/pressure/{k}")))),
            disks: devices.iter().filter_map(|d| Some((d.clone(), *all.get(d)?))).collect(),
            net: proc::parse_net_dev(&read("/proc/net/dev")),
            own_ticks: proc::parse_pid_cpu(&read("/proc/self/stat")).map_or(0, |(t, _)| t),
            server_ticks: server,
        }
    }

    fn since(&self, prev: &Reading, begun: Instant, own_extra: Duration) -> Sample {
        let secs = self.at.duration_since(prev.at).as_secs_f64().max(1e-3);
        let hz = ticks_per_s();
        let (a, b) = (&prev.stat, &self.stat);
        let total = b.total().saturating_sub(a.total()).max(1) as f64;
        let pct = |x: u64, y: u64| 100.0 * y.saturating_sub(x) as f64 / total;
        let psi = |i: usize, full: bool| {
            let (x, y) = if full { (prev.psi[i].1, self.psi[i].1) } else { (prev.psi[i].0, self.psi[i].0) };
            100.0 * y.saturating_sub(x) as f64 / 1e6 / secs
        };
        let meminfo = read("/proc/meminfo");
        let mem = proc::parse_meminfo(&meminfo);
        // Processes present at both readings count their growth; new ones all their time.
        let server = self.server_ticks.as_ref().map(|now| {
            let before = prev.server_ticks.clone().unwrap_or_default();
            let ticks: u64 = now.iter().map(|(p, t)| t.saturating_sub(before.get(p).copied().unwrap_or(0))).sum();
            100.0 * ticks as f64 / hz / secs
        });
        let own = self.own_ticks.saturating_sub(prev.own_ticks) as f64 / hz - own_extra.as_secs_f64();
        Sample {
            t_s: self.at.duration_since(begun).as_secs_f64(),
            cpu_busy_pct: 100.0 * b.busy().saturating_sub(a.busy()) as f64 / total,
            cpu_user_pct: pct(a.user + a.nice, b.user + b.nice),
            cpu_system_pct: pct(a.system + a.irq + a.softirq, b.system + b.irq + b.softirq),
            cpu_iowait_pct: pct(a.iowait, b.iowait),
            cpu_steal_pct: pct(a.steal, b.steal),
            ctxt_per_s: b.ctxt.saturating_sub(a.ctxt) as f64 / secs,
            mem_available_mb: mem.get("MemAvailable").copied().unwrap_or(0.0),
            dirty_mb: mem.get("Dirty").copied().unwrap_or(0.0),
            psi_cpu_some_pct: psi(0, false),
            psi_io_some_pct: psi(1, false),
            psi_io_full_pct: psi(1, true),
            psi_memory_some_pct: psi(2, false),
            dbvs_cpu_pct: (100.0 * own / secs).max(0.0),
            server_cpu_pct: server,
            disks: self
                .disks
                .iter()
                .filter_map(|(d, c)| Some((d.clone(), proc::disk_rates(prev.disks.get(d)?, c, secs))))
                .collect(),
            net: self
                .net
                .iter()
                .filter_map(|(i, c)| Some((i.clone(), proc::net_rates(*prev.net.get(i)?, *c, secs))))
                .filter(|(_, r)| r.rx_mbit_s > 0.0 || r.tx_mbit_s > 0.0)
                .collect(),
            watts: None,
        }
    }
}

/// A running sampler; [`Sampler::finish`] stops it and summarizes.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(keep::Keeper, Duration)>>,
    begun: Instant,
    window: Arc<Mutex<keep::Window>>,
    report: Telemetry,
}

impl Sampler {
    /// Reads idle power (when there is a source), then starts sampling.
    pub fn start(opts: Options) -> Result<Self> {
        let mut source = power::Source::open(&opts.power)?;
        let (layers, devs) = devices::devices(&opts.volumes);
        let mut report = Telemetry {
            interval_s: opts.interval.as_secs_f64(),
            layers,
            devices: devs.clone(),
            server_cpu: if !opts.server_pid_files.is_empty() {
                "managed server processes".into()
            } else {
                opts.server_note.into()
            },
            peak_tail_minutes: opts.peak_minutes,
            ..Default::default()
        };
        report.power.source = source.as_ref().map_or("unavailable".into(), power::Source::name);
        if let Some(s) = source.as_mut().filter(|_| !opts.idle.is_zero()) {
            let t = Instant::now();
            let mut watts = Vec::new();
            s.read()?;
            while t.elapsed() < opts.idle {
                std::thread::sleep(opts.interval.min(opts.idle));
                watts.extend(s.read()?);
            }
            report.power.idle_w = (!watts.is_empty()).then(|| watts.iter().sum::<f64>() / watts.len() as f64);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let begun = Instant::now();
        let window = Arc::<Mutex<keep::Window>>::default();
        let (flag, interval, pid_files, bounds) =
            (stop.clone(), opts.interval, opts.server_pid_files.clone(), window.clone());
        let mut kept = keep::Keeper::new(interval.as_secs_f64(), opts.peak_minutes);
        let thread = std::thread::Builder::new().name("telemetry".into()).spawn(move || {
            let mut prev = Reading::take(&devs, &pid_files);
            let mut own_cpu = crate::sys::thread_cpu();
            loop {
                let next = prev.at + interval;
                while Instant::now() < next && !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20).min(next.saturating_duration_since(Instant::now())));
                }
                let done = flag.load(Ordering::Relaxed);
                if done && prev.at.elapsed() < interval / 5 {
                    break;
                }
                let cur = Reading::take(&devs, &pid_files);
                let watts = source.as_mut().and_then(|s| s.read().ok().flatten());
                // The sampler's own CPU is left out of dbvs's figure and reported apart.
                let spent = crate::sys::thread_cpu();
                let mut sample = cur.since(&prev, begun, spent.saturating_sub(own_cpu));
                own_cpu = spent;
                sample.watts = watts;
                kept.add(sample, *bounds.lock().unwrap_or_else(|p| p.into_inner()));
                prev = cur;
                if done {
                    break;
                }
            }
            (kept, crate::sys::thread_cpu())
        })?;
        Ok(Sampler { stop, thread: Some(thread), begun, window, report })
    }

    /// The window starts with the last instance's.
    pub fn window_start(&self) {
        self.window.lock().unwrap_or_else(|p| p.into_inner()).start = Some(self.begun.elapsed().as_secs_f64());
    }

    /// The window ends with the first instance's (staggered instances all measure from the
    /// last one's start to the first one's end).
    pub fn window_end(&self) {
        self.window.lock().unwrap_or_else(|p| p.into_inner()).end.get_or_insert(self.begun.elapsed().as_secs_f64());
    }

    /// Stops sampling and summarizes; `headline` (value, unit) gives perf per watt.
    pub fn finish(mut self, headline: Option<(f64, &str)>) -> Telemetry {
        self.stop.store(true, Ordering::Relaxed);
        let mut r = std::mem::take(&mut self.report);
        let Some((kept, cpu)) = self.thread.take().and_then(|t| t.join().ok()) else {
            return r;
        };
        let wall = self.begun.elapsed().as_secs_f64().max(1e-3);
        let window = *self.window.lock().unwrap_or_else(|p| p.into_inner());
        let kept = kept.finish(window, wall);
        (r.samples, r.series_halvings, r.window, r.peak_tail) =
            (kept.series, kept.halvings, kept.window, kept.peak_tail);
        r.power.window_w = r.window.as_ref().and_then(|w| w.watts);
        if let (Some((value, unit)), Some(w)) = (headline, r.power.window_w.filter(|w| *w > 0.0)) {
            r.power.per_watt = Some(value / w);
            r.power.per_watt_unit = Some(format!("{unit}/W"));
        }
        r.sampler_cpu_pct = 100.0 * cpu.as_secs_f64() / wall;
        r
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusters_processes_are_every_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes: Vec<std::process::Child> =
            (0..2).map(|_| std::process::Command::new("sleep").arg("30").spawn().unwrap()).collect();
        let files: Vec<PathBuf> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let f = dir.path().join(format!("node{i}.pid"));
                std::fs::write(&f, format!("{}\n", n.id())).unwrap();
                f
            })
            .collect();
        let missing = dir.path().join("gone.pid");
        let found = server_processes(&[files.clone(), vec![missing]].concat());
        for n in &mut nodes {
            n.kill().unwrap();
            n.wait().unwrap();
        }
        let mut want: Vec<u32> = nodes.iter().map(|n| n.id()).collect();
        want.sort();
        assert_eq!(found, want, "both nodes; a missing pid file adds none");
        assert!(server_processes(&[]).is_empty());
    }

    #[test]
    fn averages_cover_each_field_and_device() {
        let a = Sample { t_s: 1.0, cpu_busy_pct: 10.0, watts: Some(100.0), ..Default::default() };
        let mut b = Sample { t_s: 2.0, cpu_busy_pct: 30.0, ..Default::default() };
        b.disks.insert("vda".into(), DiskRates { tps: 8.0, ..Default::default() });
        let m = average(&[&a, &b]).unwrap();
        assert_eq!((m.cpu_busy_pct, m.watts, m.t_s), (20.0, Some(100.0), 1.0));
        assert_eq!(m.disks["vda"].tps, 4.0);
        assert!(average(&[]).is_none());
    }

    /// This process's CPU time so far (all threads), in seconds.
    fn process_cpu_s() -> f64 {
        // SAFETY: getrusage writes into the struct we own.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        secs(u.ru_utime) + secs(u.ru_stime)
    }

    #[test]
    fn the_sampler_sees_this_process_burn_cpu_and_a_command_meter() {
        let s = Sampler::start(Options {
            interval: Duration::from_millis(200),
            power: power::PowerSpec::Command("echo 50".into()),
            idle: Duration::from_millis(200),
            volumes: vec![("data".into(), std::env::temp_dir())],
            server_pid_files: vec![],
            server_note: "embedded",
            peak_minutes: 10.0,
        })
        .unwrap();
        s.window_start();
        let (t, cpu0) = (Instant::now(), process_cpu_s());
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(900) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        // What this process really got: on a loaded machine the loop may get half a core.
        let got_pct = 100.0 * (process_cpu_s() - cpu0) / t.elapsed().as_secs_f64();
        s.window_end();
        let r = s.finish(Some((600.0, "opm")));
        let w = r.window.unwrap();
        assert!(r.samples.len() >= 2, "{}", r.samples.len());
        assert!(w.dbvs_cpu_pct > 0.5 * got_pct && w.dbvs_cpu_pct < 1.5 * got_pct + 20.0, "got {got_pct}%: {w:?}");
        assert!(w.cpu_busy_pct > 0.1 * got_pct, "{w:?}");
        assert_eq!((r.power.idle_w, r.power.window_w, r.power.per_watt), (Some(50.0), Some(50.0), Some(12.0)));
        assert!(r.sampler_cpu_pct < 50.0);
    }

    #[test]
    fn a_side_keeps_its_own_layers_and_the_disks_under_them() {
        let sample = || Sample {
            disks: ["vda", "loop3", "loop4"].map(|d| (d.to_string(), DiskRates::default())).into(),
            ..Default::default()
        };
        let layer = |device: &str| devices::Layer {
            mount_point: format!("/mnt/{device}"),
            fs_type: "ext4".into(),
            device: Some(device.into()),
            volume: "data".into(),
            read_ahead_kb: None,
        };
        let shared = Telemetry {
            layers: vec![layer("loop3")],
            devices: vec!["loop3".into(), "loop4".into(), "vda".into()],
            samples: vec![sample(), sample()],
            window: Some(sample()),
            peak_tail: Some(sample()),
            ..Default::default()
        };
        let side = shared.for_side((vec![layer("loop4")], vec!["loop4".into()]));
        assert_eq!(side.layers, vec![layer("loop4")]);
        assert_eq!(side.devices, ["loop4"]);
        let all = side.samples.iter().chain(&side.window).chain(&side.peak_tail);
        for s in all {
            assert_eq!(s.disks.keys().collect::<Vec<_>>(), ["loop4"]);
        }
        assert_eq!(side.samples.len(), 2);
    }

    #[test]
    fn the_cpu_of_a_child_that_ended_still_counts() {
        let dir = tempfile::tempdir().unwrap();
        let done = dir.path().join("done");
        // A child burns one second of CPU (its CPU limit ends it), its parent waits for it
        // and lives on: the parent's count must hold the child's second.
        let script = format!("(ulimit -t 1; while :; do :; done); touch {}; sleep 30", done.display());
        let mut parent = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let t = Instant::now();
        while !done.exists() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let counted = cpu_time(&[parent.id()]);
        parent.kill().unwrap();
        parent.wait().unwrap();
        assert!(done.exists(), "the child never ended");
        // Without the reaped children's account the parent's count is near zero; with it,
        // the kernel's tick-sampled account of the child's second came to 0.86 s on a busy
        // machine, so the bar sits well between the two.
        assert!(counted >= Duration::from_millis(500), "{counted:?}");
    }
}
