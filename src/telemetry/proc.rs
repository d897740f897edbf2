//! Raw counters from /proc, parsed by small pure functions (tested on captured text).
//! Every value is cumulative; the sampler turns pairs of readings into rates.

use std::collections::BTreeMap;

/// The aggregate `cpu` line of /proc/stat, in clock ticks, and the context switch count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stat {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub ctxt: u64,
}

impl Stat {
    /// guest and guest_nice are already inside user and nice, so they are not added again.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }

    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait
    }
}

pub fn parse_stat(text: &str) -> Stat {
    let mut s = Stat::default();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        match f.next() {
            Some("cpu") => {
                let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
                let at = |i: usize| v.get(i).copied().unwrap_or(0);
                (s.user, s.nice, s.system, s.idle) = (at(0), at(1), at(2), at(3));
                (s.iowait, s.irq, s.softirq, s.steal) = (at(4), at(5), at(6), at(7));
            }
            Some("ctxt") => s.ctxt = f.next().and_then(|x| x.parse().ok()).unwrap_or(0),
            _ => {}
        }
    }
    s
}

/// utime + stime of a process (ticks), from /proc/PID/stat; the fields are counted after
/// the last `)`, since the command name may hold spaces and parentheses.
pub fn parse_pid_cpu(text: &str) -> Option<(u64, u32)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ")": field 3 (state) is f[0], so field N is f[N - 3].
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let ppid: u32 = f.get(1)?.parse().ok()?;
    Some((utime + stime, ppid))
}

/// cutime + cstime of a process (ticks): what its children that ended and were waited for
/// used, theirs included.
pub fn parse_reaped_children_cpu(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let cutime: u64 = f.get(13)?.parse().ok()?;
    let cstime: u64 = f.get(14)?.parse().ok()?;
    Some(cutime + cstime)
}

/// MemAvailable, Dirty and Cached from /proc/meminfo, in MB.
pub fn parse_meminfo(text: &str) -> BTreeMap<&str, f64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let kb: f64 = v.split_whitespace().next()?.parse().ok()?;
            Some((k, kb / 1024.0))
        })
        .collect()
}

/// The `some` and `full` stall totals (microseconds) of a /proc/pressure file.
pub fn parse_psi(text: &str) -> (u64, u64) {
    let total = |kind: &str| {
        text.lines()
            .find(|l| l.starts_with(kind))
            .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix("total=")))
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)
    };
    (total("some"), total("full"))
}

/// One device's line of /proc/diskstats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskCounters {
    pub reads: u64,
    pub sectors_read: u64,
    pub ms_reading: u64,
    pub writes: u64,
    pub sectors_written: u64,
    pub ms_writing: u64,
    pub io_ticks_ms: u64,
}

pub fn parse_diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f.get(i).and_then(|x| x.parse().ok()).unwrap_or(0);
            (f.len() >= 14).then(|| {
                let c = DiskCounters {
                    reads: n(3),
                    sectors_read: n(5),
                    ms_reading: n(6),
                    writes: n(7),
                    sectors_written: n(9),
                    ms_writing: n(10),
                    io_ticks_ms: n(12),
                };
                (f[2].to_string(), c)
            })
        })
        .collect()
}

/// iostat's figures for one device over `secs` seconds.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskRates {
    pub reads_s: f64,
    pub writes_s: f64,
    pub tps: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    /// Mean time per I/O, queueing included (iostat's await).
    pub await_ms: f64,
    /// Share of the time with at least one I/O in flight.
    pub util_pct: f64,
}

pub fn disk_rates(a: &DiskCounters, b: &DiskCounters, secs: f64) -> DiskRates {
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let (reads, writes) = (d(a.reads, b.reads), d(a.writes, b.writes));
    let ios = reads + writes;
    let ms = d(a.ms_reading, b.ms_reading) + d(a.ms_writing, b.ms_writing);
    DiskRates {
        reads_s: reads / secs,
        writes_s: writes / secs,
        tps: ios / secs,
        read_mb_s: d(a.sectors_read, b.sectors_read) * 512.0 / 1e6 / secs,
        write_mb_s: d(a.sectors_written, b.sectors_written) * 512.0 / 1e6 / secs,
        await_ms: if ios > 0.0 { ms / ios } else { 0.0 },
        util_pct: (100.0 * d(a.io_ticks_ms, b.io_ticks_ms) / (secs * 1000.0)).min(100.0),
    }
}

/// Bytes received and sent so far per network interface, from /proc/net/dev.
pub fn parse_net_dev(text: &str) -> BTreeMap<String, (u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let (name, counters) = l.split_once(':')?;
            let f: Vec<u64> = counters.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            (f.len() >= 16).then(|| (name.trim().to_string(), (f[0], f[8])))
        })
        .collect()
}

/// One interface's traffic over an interval.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NetRates {
    pub rx_mbit_s: f64,
    pub tx_mbit_s: f64,
}

pub fn net_rates(a: (u64, u64), b: (u64, u64), secs: f64) -> NetRates {
    let mbit = |x: u64, y: u64| y.saturating_sub(x) as f64 * 8.0 / 1e6 / secs;
    NetRates { rx_mbit_s: mbit(a.0, b.0), tx_mbit_s: mbit(a.1, b.1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_busy_leaves_guest_out() {
        let s = parse_stat("cpu  100 5 50 1000 20 1 2 3 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nctxt 12345\n");
        assert_eq!((s.user, s.steal, s.ctxt), (100, 3, 12345));
        assert_eq!(s.busy(), 161);
        assert_eq!(s.total(), 1181);
    }

    #[test]
    fn pid_stat_survives_odd_command_names() {
        let line = "42 (post gres) (x)) S 7 42 42 0 -1 4194560 100 0 0 0 250 125 0 0 20 0 1 0 100 1000 50";
        assert_eq!(parse_pid_cpu(line), Some((375, 7)));
        assert_eq!(parse_pid_cpu("garbage"), None);
    }

    #[test]
    fn meminfo_and_psi() {
        let m = parse_meminfo("MemTotal:       2048 kB\nMemAvailable:    1024 kB\n");
        assert_eq!(m["MemAvailable"], 1.0);
        let p = parse_psi(
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=700\n",
        );
        assert_eq!(p, (1500, 700));
        assert_eq!(parse_psi("some avg10=0.00 total=9\n"), (9, 0));
    }

    #[test]
    fn network_bytes_per_interface() {
        let text =
            "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes ...\n\
                    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n  eth0: 250000 8 0 0 0 0 0 0 125000 4 0 0 0 0 0 0\n";
        let n = parse_net_dev(text);
        assert_eq!(n.len(), 2);
        assert_eq!(n["eth0"], (250_000, 125_000));
        let r = net_rates(n["eth0"], (500_000, 250_000), 2.0);
        assert_eq!((r.rx_mbit_s, r.tx_mbit_s), (1.0, 0.5));
    }

    #[test]
    fn iostat_formulas() {
        let text = "   8       0 sda 100 0 800 50 200 0 1600 150 0 400 200 0 0 0 0\n";
        let a = parse_diskstats(text)["sda"];
        let b = DiskCounters {
            reads: 200,
            sectors_read: 2800,
            ms_reading: 150,
            writes: 300,
            sectors_written: 3600,
            ms_writing: 250,
            io_ticks_ms: 900,
        };
        let r = disk_rates(&a, &b, 2.0);
        assert_eq!((r.reads_s, r.writes_s, r.tps), (50.0, 50.0, 100.0));
        assert!((r.read_mb_s - 2000.0 * 512.0 / 1e6 / 2.0).abs() < 1e-9);
        assert_eq!(r.await_ms, 1.0);
        assert_eq!(r.util_pct, 25.0);
    }
}
