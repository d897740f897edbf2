//! What the sampler keeps of its samples, in memory that stays bounded however long the
//! run: exact means of the measurement window and of its last minutes, and a series for
//! the CSV whose pairs of neighbours merge each time it fills (its step doubles).

use super::proc::NetRates;
use super::{DiskRates, Sample};
use std::collections::VecDeque;

/// The series' length at which neighbours merge: 10 minutes at the default 1 s, so a run
/// of that length or shorter keeps every sample.
const SERIES_CAP: usize = 600;

/// A running mean of samples, field by field (a device or interface missing from a sample
/// counts as idle in it).
#[derive(Default)]
struct Mean {
    n: usize,
    sum: Sample,
    server_n: usize,
    watts_n: usize,
    first_t: f64,
}

impl Mean {
    fn add(&mut self, s: &Sample) {
        if self.n == 0 {
            self.first_t = s.t_s;
        }
        self.n += 1;
        self.sum.t_s = s.t_s;
        for (total, v) in scalars(&mut self.sum).into_iter().zip(values(s)) {
            *total += v;
        }
        if let Some(v) = s.server_cpu_pct {
            *self.sum.server_cpu_pct.get_or_insert(0.0) += v;
            self.server_n += 1;
        }
        if let Some(v) = s.watts {
            *self.sum.watts.get_or_insert(0.0) += v;
            self.watts_n += 1;
        }
        for (d, r) in &s.disks {
            let total = self.sum.disks.entry(d.clone()).or_default();
            for (t, v) in disk_scalars(total).into_iter().zip(disk_values(r)) {
                *t += v;
            }
        }
        for (i, r) in &s.net {
            let total = self.sum.net.entry(i.clone()).or_default();
            total.rx_mbit_s += r.rx_mbit_s;
            total.tx_mbit_s += r.tx_mbit_s;
        }
    }

    /// The mean, with `t_s` the seconds from the first sample's end to the last's (None
    /// when empty).
    fn get(&self) -> Option<Sample> {
        let mut m = self.merged()?;
        m.t_s -= self.first_t;
        Some(m)
    }

    /// The mean as one sample of the series: `t_s` is the last sample's end.
    fn merged(&self) -> Option<Sample> {
        if self.n == 0 {
            return None;
        }
        let n = self.n as f64;
        let mut m = self.sum.clone();
        scalars(&mut m).into_iter().for_each(|v| *v /= n);
        m.server_cpu_pct = m.server_cpu_pct.map(|v| v / self.server_n as f64);
        m.watts = m.watts.map(|v| v / self.watts_n as f64);
        for r in m.disks.values_mut() {
            disk_scalars(r).into_iter().for_each(|v| *v /= n);
        }
        for r in m.net.values_mut() {
            *r = NetRates { rx_mbit_s: r.rx_mbit_s / n, tx_mbit_s: r.tx_mbit_s / n };
        }
        Some(m)
    }
}

/// The fields every sample has, but `t_s`.
fn scalars(s: &mut Sample) -> [&mut f64; 13] {
    [
        &mut s.cpu_busy_pct,
        &mut s.cpu_user_pct,
        &mut s.cpu_system_pct,
        &mut s.cpu_iowait_pct,
        &mut s.cpu_steal_pct,
        &mut s.ctxt_per_s,
        &mut s.mem_available_mb,
        &mut s.dirty_mb,
        &mut s.psi_cpu_some_pct,
        &mut s.psi_io_some_pct,
        &mut s.psi_io_full_pct,
        &mut s.psi_memory_some_pct,
        &mut s.dbvs_cpu_pct,
    ]
}

/// [`scalars`]' values, in the same order.
fn values(s: &Sample) -> [f64; 13] {
    [
        s.cpu_busy_pct,
        s.cpu_user_pct,
        s.cpu_system_pct,
        s.cpu_iowait_pct,
        s.cpu_steal_pct,
        s.ctxt_per_s,
        s.mem_available_mb,
        s.dirty_mb,
        s.psi_cpu_some_pct,
        s.psi_io_some_pct,
        s.psi_io_full_pct,
        s.psi_memory_some_pct,
        s.dbvs_cpu_pct,
    ]
}

fn disk_scalars(r: &mut DiskRates) -> [&mut f64; 7] {
    [&mut r.reads_s, &mut r.writes_s, &mut r.tps, &mut r.read_mb_s, &mut r.write_mb_s, &mut r.await_ms, &mut r.util_pct]
}

fn disk_values(r: &DiskRates) -> [f64; 7] {
    [r.reads_s, r.writes_s, r.tps, r.read_mb_s, r.write_mb_s, r.await_ms, r.util_pct]
}

/// The measurement window's bounds as the sampler knows them when a sample is taken: its
/// start moves with each staggered instance's, its end is the first instance's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    pub start: Option<f64>,
    pub end: Option<f64>,
}

impl Window {
    fn start(&self) -> f64 {
        self.start.unwrap_or(0.0)
    }

    /// The end, unless instances never measured at once (the first ended before the last
    /// started): then the window runs to the sampler's end.
    fn end(&self) -> Option<f64> {
        self.end.filter(|e| *e > self.start())
    }
}

/// The samples' summaries, kept as they arrive.
pub struct Keeper {
    interval_s: f64,
    peak_s: f64,
    series: Vec<Sample>,
    halvings: u32,
    pending: Mean,
    start: f64,
    window: Mean,
    /// The window's latest samples, enough to cover its last `peak_s`.
    tail: VecDeque<Sample>,
    tail_cap: usize,
}

/// What a [`Keeper`] hands over at the end.
pub struct Kept {
    pub series: Vec<Sample>,
    /// Each sample of the series is the mean of 2^halvings intervals.
    pub halvings: u32,
    pub window: Option<Sample>,
    pub peak_tail: Option<Sample>,
}

impl Keeper {
    pub fn new(interval_s: f64, peak_minutes: f64) -> Self {
        let peak_s = 60.0 * peak_minutes;
        let tail_cap = (peak_s / interval_s).ceil() as usize + 2;
        Keeper {
            interval_s,
            peak_s,
            series: Vec::with_capacity(SERIES_CAP),
            halvings: 0,
            pending: Mean::default(),
            start: 0.0,
            window: Mean::default(),
            tail: VecDeque::with_capacity(tail_cap),
            tail_cap,
        }
    }

    /// A sample belongs to the window when its interval's middle falls inside it.
    pub fn add(&mut self, s: Sample, window: Window) {
        let mid = s.t_s - self.interval_s / 2.0;
        if window.start() != self.start {
            // A later instance started: what was kept belongs before the window.
            self.start = window.start();
            self.window = Mean::default();
            self.tail.clear();
        }
        if mid >= self.start && window.end().is_none_or(|e| mid <= e + 1e-9) {
            self.window.add(&s);
            if self.tail.len() == self.tail_cap {
                self.tail.pop_front();
            }
            self.tail.push_back(s.clone());
        }
        self.pending.add(&s);
        if self.pending.n == 1 << self.halvings {
            self.push_pending();
        }
    }

    fn push_pending(&mut self) {
        if let Some(s) = std::mem::take(&mut self.pending).merged() {
            self.series.push(s);
        }
        // Merged as soon as it fills, so every sample of the series covers as many
        // intervals; in place, so the series never needs more room than its first fill.
        if self.series.len() == SERIES_CAP {
            for i in 0..SERIES_CAP / 2 {
                let mut m = Mean::default();
                m.add(&self.series[2 * i]);
                m.add(&self.series[2 * i + 1]);
                self.series[i] = m.merged().unwrap_or_default();
            }
            self.series.truncate(SERIES_CAP / 2);
            self.halvings += 1;
        }
    }

    /// `window`: the bounds at the end; `wall`: the sampler's seconds.
    pub fn finish(mut self, window: Window, wall: f64) -> Kept {
        self.push_pending();
        let end = window.end().unwrap_or(wall);
        // Only a window longer than the tail has one of its own (seed 000's "last 10
        // minutes of peak" in a 30-minute run).
        let tail_from = end - self.peak_s;
        let peak_tail = (tail_from > self.start)
            .then(|| {
                let mut m = Mean::default();
                self.tail.iter().filter(|s| s.t_s - self.interval_s / 2.0 >= tail_from).for_each(|s| m.add(s));
                m.get()
            })
            .flatten();
        Kept { series: self.series, halvings: self.halvings, window: self.window.get(), peak_tail }
    }
}

/// The mean of each field over `samples` (None when empty).
pub fn average(samples: &[&Sample]) -> Option<Sample> {
    let mut m = Mean::default();
    samples.iter().for_each(|s| m.add(s));
    m.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64) -> Sample {
        let mut s = Sample { t_s: t, cpu_busy_pct: (t * 7.0) % 100.0, server_cpu_pct: Some(t), ..Default::default() };
        s.disks.insert("vda".into(), DiskRates { tps: t % 13.0, ..Default::default() });
        s
    }

    fn batch(samples: &[Sample], from: f64, to: f64) -> Sample {
        let within: Vec<&Sample> = samples.iter().filter(|s| (from..=to).contains(&(s.t_s - 0.5))).collect();
        average(&within).unwrap()
    }

    fn close(a: &Sample, b: &Sample) -> bool {
        let near = |x: f64, y: f64| (x - y).abs() < 1e-6 * (1.0 + y.abs());
        near(a.cpu_busy_pct, b.cpu_busy_pct)
            && near(a.server_cpu_pct.unwrap(), b.server_cpu_pct.unwrap())
            && near(a.disks["vda"].tps, b.disks["vda"].tps)
            && near(a.t_s, b.t_s)
    }

    #[test]
    fn an_hours_samples_keep_a_bounded_series_and_exact_means() {
        let all: Vec<Sample> = (1..=3600).map(|i| sample(i as f64)).collect();
        let mut k = Keeper::new(1.0, 10.0);
        let open = Window { start: Some(100.0), end: None };
        for s in &all {
            let w = if s.t_s <= 3000.0 { open } else { Window { end: Some(3000.0), ..open } };
            k.add(s.clone(), w);
        }
        let kept = k.finish(Window { start: Some(100.0), end: Some(3000.0) }, 3600.5);
        assert!(close(&kept.window.unwrap(), &batch(&all, 100.0, 3000.0)));
        assert!(close(&kept.peak_tail.unwrap(), &batch(&all, 2400.0, 3000.0)));
        assert!(kept.series.len() <= SERIES_CAP && kept.halvings == 3, "{} {}", kept.series.len(), kept.halvings);
        // Every sample is in the series once: full means of 8, then what was pending.
        assert_eq!(kept.series.len(), 3600 / 8);
        let series: Vec<&Sample> = kept.series.iter().collect();
        assert!(
            (average(&series).unwrap().cpu_busy_pct - average(&all.iter().collect::<Vec<_>>()).unwrap().cpu_busy_pct)
                .abs()
                < 1e-9
        );
        assert_eq!(kept.series.last().unwrap().t_s, 3600.0);
    }

    #[test]
    fn a_later_instances_start_moves_the_window_and_a_short_one_has_no_tail() {
        let all: Vec<Sample> = (1..=200).map(|i| sample(i as f64)).collect();
        let mut k = Keeper::new(1.0, 10.0);
        for s in &all {
            let start = if s.t_s < 50.0 { 10.0 } else { 50.0 };
            k.add(s.clone(), Window { start: Some(start), end: None });
        }
        let kept = k.finish(Window { start: Some(50.0), end: None }, 200.2);
        assert!(close(&kept.window.unwrap(), &batch(&all, 50.0, 200.2)));
        assert!(kept.peak_tail.is_none(), "a 150 s window has no 10-minute tail");
        assert_eq!((kept.series.len(), kept.halvings), (200, 0));
    }

    #[test]
    fn instances_that_never_overlapped_measure_from_the_last_start_to_the_end() {
        let all: Vec<Sample> = (1..=100).map(|i| sample(i as f64)).collect();
        let mut k = Keeper::new(1.0, 0.5);
        let w = Window { start: Some(60.0), end: Some(40.0) };
        all.iter().for_each(|s| k.add(s.clone(), w));
        let kept = k.finish(w, 100.3);
        assert!(close(&kept.window.unwrap(), &batch(&all, 60.0, 100.3)));
        assert!(close(&kept.peak_tail.unwrap(), &batch(&all, 70.3, 100.3)));
    }
}
