//! `bignw`: seed 003's Northwind micro-suite. Ten benchmarks in five categories (retrieve,
//! insert, update, delete, backup; [`benchmarks`]) on a Northwind-shaped database with
//! BigNW's row counts ([`data`], `--size` = scale factor, 1 = BigNW).
//!
//! The seed's method, improved:
//! - Calibration: each benchmark's iterations per unit are chosen so one unit takes about
//!   1.2x `--unit-time` (default 5 s, so units land in the seed's 5-20 s), unless
//!   `--unit-iterations` fixes them. Studies calibrate once, on the baseline, and every
//!   variant then does the same work.
//! - Units run in rotation (b1..b10, b1..b10, ...) `--repeat` times; `--cold` empties the
//!   caches before every unit. In a study each benchmark runs on every variant in turn
//!   (the seed's balanced order), block after block.
//! - State is restored around every unit, and checked after the run: the order and line
//!   counts and the freight total are the build's.
//! - Reported per benchmark: mean unit time, its 95% t-interval as +-% of the mean (the
//!   seed's figure), and the rows each iteration touched.

pub mod benchmarks;
mod data;
mod schema;

use super::{Check, Measure, Part, Workload, WorkloadSpec};
use crate::driver::{FromStart, IntervalSample, Pacing, RunResult, UnitRecorder, Worker};
use crate::targets::sql as seam;
use crate::targets::{BuildMeta, Connection, Database, Engine};
use anyhow::{bail, Context, Result};
use benchmarks::{UnitPlan, UnitResult, ALL, KEYS};
use data::Sizes;
use indicatif::ProgressBar;
use serde::Deserialize as _;
use serde::Serialize;
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;

const FORMAT: &str = "1";
/// Rows per INSERT statement while loading.
const ROWS_PER_INSERT: usize = 500;

/// bignw's options, on the command line and in run specs.
#[derive(clap::Args, Clone, Debug, Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[group(id = "bignw_options")]
pub struct Options {
    /// bignw: the benchmarks to run, e.g. 1,4,10 [default: all ten].
    #[arg(long = "benchmark", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=10))]
    pub benchmarks: Vec<u8>,
    /// bignw: the time one calibrated unit should take at least (the seed: 5 s).
    #[arg(long, default_value = "5s", value_parser = crate::sys::units::parse_duration)]
    #[serde(with = "crate::sys::units::duration_text")]
    pub unit_time: Duration,
    /// bignw: iterations per unit instead of calibrating: one number for every benchmark,
    /// or N=K pairs such as 1=12,2=19.
    #[arg(long)]
    #[serde(deserialize_with = "number_or_text")]
    pub unit_iterations: Option<String>,
    /// bignw: empty the caches before every iteration inside a unit, untimed (the seed's
    /// clearing between executions), rather than before every unit as --cold does.
    #[arg(long)]
    pub cold_iterations: bool,
}

/// `unit_iterations = 12` or `unit_iterations = "1=12,2=19"` in a study file.
fn number_or_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Given {
        Number(u64),
        Text(String),
    }
    Ok(Option::<Given>::deserialize(d)?.map(|given| match given {
        Given::Number(n) => n.to_string(),
        Given::Text(t) => t,
    }))
}

impl Default for Options {
    fn default() -> Self {
        Self { benchmarks: vec![], unit_time: Duration::from_secs(5), unit_iterations: None, cold_iterations: false }
    }
}

/// Parses `--size` as a scale factor (1 = BigNW, 0.01 = about Northwind's own size).
pub fn scale(size: Option<&str>) -> Result<f64> {
    match size.unwrap_or("1").parse::<f64>() {
        Ok(s) if (0.01..=100.0).contains(&s) => Ok(s),
        _ => bail!("bignw takes --size as a scale factor from 0.01 to 100 (1 = BigNW: 83,830 orders), e.g. --size 0.1"),
    }
}

/// Parses `--unit-iterations` for the benchmarks selected (0-based indexes).
fn fixed_iterations(spec: &str, selected: &[usize]) -> Result<Vec<Option<u64>>> {
    let bad = || format!("--unit-iterations '{spec}': expected a number, or N=K pairs such as 1=12,2=19");
    let mut out = vec![None; ALL.len()];
    if let Ok(k) = spec.parse::<u64>() {
        selected.iter().for_each(|&b| out[b] = Some(k));
    } else {
        for pair in spec.split(',') {
            let (n, k) = pair.split_once('=').with_context(bad)?;
            let (n, k): (usize, u64) = (n.trim().parse().with_context(bad)?, k.trim().parse().with_context(bad)?);
            if !(1..=ALL.len()).contains(&n) {
                bail!("{}", bad());
            }
            out[n - 1] = Some(k);
        }
    }
    if out.iter().flatten().any(|&k| k == 0) {
        bail!("--unit-iterations must be at least 1");
    }
    Ok(out)
}

/// Exact running sums of one benchmark's unit times (constant memory).
#[derive(Clone, Copy, Default)]
struct Times {
    n: u64,
    sum: f64,
    sum_sq: f64,
    iterations: u64,
    rows: Option<u64>,
    rows_changed: bool,
    backup_bytes: Option<u64>,
    cache_clears: u64,
}

pub struct Bignw {
    scale: f64,
    sizes: Sizes,
    seed: u64,
    repeat: u32,
    cold: bool,
    keep_backup: bool,
    /// The selected benchmarks, 0-based, in rotation order.
    selected: Vec<usize>,
    unit_time: Duration,
    fixed: Vec<Option<u64>>,
    options: Options,
    times: Mutex<[Times; 10]>,
}

impl Bignw {
    pub fn new(args: &WorkloadSpec, options: &Options) -> Result<Self> {
        let scale = scale(args.size.as_deref())?;
        if let Some(b) = options.benchmarks.iter().find(|b| !(1..=10).contains(*b)) {
            bail!("bignw has benchmarks 1 to 10, not {b}");
        }
        let mut selected: Vec<usize> = options.benchmarks.iter().map(|&b| usize::from(b) - 1).collect();
        if selected.is_empty() {
            selected = (0..ALL.len()).collect();
        }
        selected.dedup();
        if options.unit_time.is_zero() {
            bail!("--unit-time must be longer than 0");
        }
        let fixed = match &options.unit_iterations {
            Some(spec) => fixed_iterations(spec, &selected)?,
            None => vec![None; ALL.len()],
        };
        Ok(Self {
            scale,
            sizes: Sizes::at(scale),
            seed: args.seed,
            repeat: args.repeat_or(5)?,
            cold: args.cold,
            keep_backup: args.keep_backup,
            selected,
            unit_time: options.unit_time,
            fixed,
            options: options.clone(),
            times: Mutex::default(),
        })
    }

    fn plan(&self, benchmark: usize, iterations: u64) -> UnitPlan {
        UnitPlan { benchmark, iterations, cold_iterations: self.options.cold_iterations, keep_backup: self.keep_backup }
    }

    fn times(&self) -> std::sync::MutexGuard<'_, [Times; 10]> {
        self.times.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Iterations per unit of benchmark `b`: fixed, or grown until a unit takes a tenth
    /// of the target and then scaled to 1.2x the target.
    fn calibrate(&self, conn: &mut Connection, db: &dyn Database, b: usize) -> Result<u64> {
        let cap = benchmarks::max_iterations(b, &self.sizes);
        if let Some(k) = self.fixed[b] {
            if k > cap {
                bail!("benchmark {} can do at most {cap} iterations per unit at this --size", b + 1);
            }
            return Ok(k);
        }
        let target = self.unit_time.as_secs_f64();
        let mut k = 1;
        loop {
            if crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            let t = benchmarks::unit(conn, db, &self.sizes, self.plan(b, k))?.took.as_secs_f64().max(1e-6);
            if t >= target / 10.0 || k >= cap {
                let k = ((k as f64) * 1.2 * target / t).ceil() as u64;
                return Ok(k.clamp(1, cap));
            }
            k = (k * 2).max((k as f64 * target / 10.0 / t).ceil() as u64).min(cap);
        }
    }

    fn load(&self, db: &dyn Database, progress: &ProgressBar) -> Result<()> {
        let mut conn = db.connect()?;
        let d = conn.engine();
        for (name, cols) in schema::TABLES {
            seam::exec(&mut conn, &schema::create(name, cols, d))?;
        }
        progress.set_length(self.sizes.total_rows());
        let mut sql = String::new();
        data::Generator::new(self.sizes, self.seed).tables(|table, rows| {
            if crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            seam::exec(&mut conn, "BEGIN")?;
            for chunk in rows.chunks(ROWS_PER_INSERT) {
                sql.clear();
                sql.push_str("INSERT INTO ");
                sql.push_str(table);
                sql.push_str(" VALUES ");
                for (i, row) in chunk.iter().enumerate() {
                    sql.push_str(if i == 0 { "(" } else { ", (" });
                    for (j, v) in row.iter().enumerate() {
                        if j > 0 {
                            sql.push_str(", ");
                        }
                        v.literal(&mut sql);
                    }
                    sql.push(')');
                }
                seam::exec(&mut conn, &sql)?;
                progress.inc(chunk.len() as u64);
            }
            seam::exec(&mut conn, "COMMIT")?;
            Ok(())
        })?;
        for i in schema::INDEXES {
            seam::exec(&mut conn, i)?;
        }
        seam::exec(
            &mut conn,
            if d == Engine::Mariadb { "ANALYZE TABLE orders, order_details, customers" } else { "ANALYZE" },
        )?;
        let mut meta = self.build_identity();
        meta.insert("freight_total".into(), format!("{:.2}", seam::number(&mut conn, FREIGHT_TOTAL)?));
        meta.insert("dbvs_version".into(), env!("CARGO_PKG_VERSION").into());
        crate::targets::write_meta(&mut conn, &meta)
    }
}

const FREIGHT_TOTAL: &str = "SELECT sum(freight) FROM orders";

struct BignwWorker<'a> {
    w: &'a Bignw,
    db: &'a dyn Database,
    conn: Connection,
    iterations: [u64; 10],
    next: usize,
}

impl Worker for BignwWorker<'_> {
    fn run_unit(&mut self, rec: &mut UnitRecorder) -> Result<crate::driver::Outcome> {
        let b = self.w.selected[self.next % self.w.selected.len()];
        self.next += 1;
        let k = self.iterations[b];
        let UnitResult { took, rows, untimed, backup_bytes, cache_clears } =
            benchmarks::unit(&mut self.conn, self.db, &self.w.sizes, self.w.plan(b, k))?;
        rec.op(b, took);
        rec.untimed(untimed);
        let mut times = self.w.times();
        let t = &mut times[b];
        let s = took.as_secs_f64();
        t.n += 1;
        t.sum += s;
        t.sum_sq += s * s;
        t.iterations = k;
        t.rows_changed |= t.rows.is_some_and(|r| r != rows);
        t.rows = Some(rows);
        t.backup_bytes = backup_bytes.or(t.backup_bytes);
        t.cache_clears += cache_clears;
        Ok(crate::driver::Outcome::Committed)
    }

    fn pause(&mut self) -> Result<Duration> {
        // Cold iterations empty the caches themselves, before each one.
        if self.w.cold && !self.w.options.cold_iterations {
            self.db.go_cold()?;
            self.conn = self.db.connect()?;
        }
        Ok(Duration::ZERO)
    }
}

impl Workload for Bignw {
    fn name(&self) -> &'static str {
        "bignw"
    }

    fn operations(&self) -> &'static [&'static str] {
        KEYS
    }

    fn build_identity(&self) -> BuildMeta {
        BuildMeta::from([
            ("workload".into(), "bignw".into()),
            ("format".into(), FORMAT.into()),
            ("size".into(), self.scale.to_string()),
            ("seed".into(), self.seed.to_string()),
        ])
    }

    fn build(&self, db: &dyn Database, progress: &ProgressBar) -> Result<u64> {
        self.load(db, progress)?;
        Ok(self.sizes.total_rows())
    }

    fn worker<'a>(&'a self, db: &'a dyn Database, _meta: &BuildMeta, index: usize) -> Result<Box<dyn Worker + 'a>> {
        if index > 0 {
            bail!("the bignw suite runs in one session");
        }
        let mut conn = db.connect()?;
        // Each run creates the view on its copy: MariaDB cannot move a view between
        // databases, which its builds and copies do with tables.
        let d = conn.engine();
        seam::exec(&mut conn, "DROP VIEW IF EXISTS invoices")?;
        seam::exec(&mut conn, &schema::invoices(d))?;
        let mut iterations = [0; 10];
        for &b in &self.selected {
            iterations[b] = self.calibrate(&mut conn, db, b)?;
            eprintln!("bignw {}: {} iterations per unit", ALL[b].key, iterations[b]);
        }
        Ok(Box::new(BignwWorker { w: self, db, conn, iterations, next: 0 }))
    }

    fn check(&self, db: &dyn Database, meta: &BuildMeta, done: Option<&FromStart>) -> Result<Vec<Check>> {
        let mut conn = db.connect()?;
        let mut count = |t: &str| seam::number(&mut conn, &format!("SELECT count(*) FROM {t}"));
        let (orders, lines) = (count("orders")? as i64, count("order_details")? as i64);
        let freight = seam::number(&mut conn, FREIGHT_TOTAL)?;
        let built = meta.get("freight_total").and_then(|f| f.parse::<f64>().ok());
        let mut checks = vec![
            Check {
                name: "orders and order lines are as built (inserts and deletes restored)".into(),
                ok: orders == self.sizes.orders && lines == self.sizes.order_details,
                detail: format!("{}/{} expected, {orders}/{lines} found", self.sizes.orders, self.sizes.order_details),
            },
            Check {
                name: "the freight total is as built (updates restored)".into(),
                // The build stored the total to the cent; summation order may differ by far less.
                ok: built.is_some_and(|b| (b - freight).abs() <= 0.01),
                detail: format!("{built:?} expected, {freight:.2} found"),
            },
        ];
        if done.is_some() {
            let times = self.times();
            let changed: Vec<_> =
                self.selected.iter().filter(|&&b| times[b].rows_changed).map(|&b| ALL[b].key).collect();
            checks.push(Check {
                name: "every unit of a benchmark touched the same rows".into(),
                ok: changed.is_empty(),
                detail: if changed.is_empty() { "yes".into() } else { format!("changed: {}", changed.join(", ")) },
            });
        }
        Ok(checks)
    }

    fn takes_backups(&self) -> bool {
        self.selected.contains(&9)
    }

    fn adjust_pacing(&self, p: &mut Pacing) {
        p.fixed_work(u64::from(self.repeat) * self.selected.len() as u64);
    }

    fn params(&self) -> serde_json::Value {
        json!({
            "scale": self.scale,
            "orders": self.sizes.orders,
            "order_details": self.sizes.order_details,
            "customers": self.sizes.customers,
            "seed": self.seed,
            "repeat": self.repeat,
            "cold": self.cold,
            "cold_iterations": self.options.cold_iterations,
            "unit_time_s": self.unit_time.as_secs_f64(),
            "benchmarks": self.selected.iter().map(|&b| ALL[b].key).collect::<Vec<_>>(),
        })
    }

    fn metrics(&self, _run: &RunResult) -> serde_json::Value {
        let all = self.summaries();
        let suite: f64 = all.iter().map(|b| b.mean_s).sum();
        let per: serde_json::Map<_, _> = all.iter().map(|b| (b.key.to_string(), json!(b))).collect();
        json!({ "suite_s": suite, "benchmarks": per })
    }

    /// Each benchmark's mean unit time; a study gives each benchmark a run of its own.
    fn measures(&self, run: Option<&RunResult>) -> Vec<Measure> {
        let all = self.summaries();
        let one = all.len() == 1;
        all.iter()
            .map(|b| {
                let name = if one { "unit time".to_string() } else { format!("{} unit time", b.key) };
                Measure::lower(name, "s", run.map(|_| b.mean_s).filter(|m| m.is_finite()))
            })
            .collect()
    }

    fn headline(&self, run: Option<&RunResult>) -> Measure {
        let suite = self.summaries().iter().map(|b| b.mean_s).sum::<f64>();
        Measure::lower("suite", "s", run.map(|_| suite).filter(|s| s.is_finite()))
    }

    fn details(&self, _run: &RunResult) -> Vec<String> {
        let done: Vec<BenchmarkSummary> = self.summaries().into_iter().filter(|b| b.units > 0).collect();
        if done.is_empty() {
            return vec![];
        }
        vec![benchmark_table(&done).to_string()]
    }

    fn calibration(&self) -> Option<String> {
        let all = self.summaries();
        let found: Vec<String> =
            all.iter().filter(|b| b.iterations > 0).map(|b| format!("{}={}", b.benchmark, b.iterations)).collect();
        (found.len() == all.len()).then(|| found.join(","))
    }

    fn needs_calibration(&self) -> bool {
        self.options.unit_iterations.is_none()
    }

    fn calibrated(&self, found: &str) -> Option<super::Options> {
        Some(super::Options::Bignw(Options { unit_iterations: Some(found.into()), ..self.options.clone() }))
    }

    /// Each benchmark on its own, so every block runs it on every variant in turn (the
    /// seed's balanced order).
    fn parts(&self) -> Vec<Part> {
        self.selected
            .iter()
            .map(|&b| Part {
                about: format!("{} {}", ALL[b].key, ALL[b].name),
                options: super::Options::Bignw(Options { benchmarks: vec![b as u8 + 1], ..self.options.clone() }),
            })
            .collect()
    }

    fn interval_line(&self, s: &IntervalSample) -> String {
        format!("{:.0} s: {} units done", s.et_s, s.units)
    }

    fn final_line(&self, _run: &RunResult) -> String {
        let parts: Vec<String> = self
            .summaries()
            .iter()
            .map(|b| format!("{} {:.2} s +-{:.1}% ({} it.)", b.key, b.mean_s, b.ci95_pct, b.iterations))
            .collect();
        format!("bignw mean unit times: {}", parts.join(", "))
    }
}

/// One benchmark's figures, as seed 003 tabulated them.
#[derive(Serialize)]
struct BenchmarkSummary {
    #[serde(skip)]
    key: &'static str,
    benchmark: usize,
    category: &'static str,
    name: &'static str,
    iterations: u64,
    units: u64,
    mean_s: f64,
    ci95_pct: f64,
    per_iteration_ms: f64,
    rows_per_iteration: Option<u64>,
    backup_bytes: Option<u64>,
    /// Times the caches were emptied inside its units (cold iterations).
    cache_clears: u64,
    unit_in_target: bool,
}

impl Bignw {
    /// The selected benchmarks' unit times so far: mean and 95% CI.
    fn summaries(&self) -> Vec<BenchmarkSummary> {
        let times = self.times();
        self.selected
            .iter()
            .map(|&b| {
                let t = &times[b];
                let n = t.n as f64;
                let mean = if t.n > 0 { t.sum / n } else { f64::NAN };
                let sd = if t.n > 1 { ((t.sum_sq - n * mean * mean) / (n - 1.0)).max(0.0).sqrt() } else { f64::NAN };
                let half = if t.n > 1 { crate::stats::t_critical(n - 1.0) * sd / n.sqrt() } else { f64::NAN };
                let unit = self.unit_time.as_secs_f64();
                BenchmarkSummary {
                    key: ALL[b].key,
                    benchmark: b + 1,
                    category: ALL[b].category,
                    name: ALL[b].name,
                    iterations: t.iterations,
                    units: t.n,
                    mean_s: mean,
                    ci95_pct: 100.0 * half / mean,
                    per_iteration_ms: 1000.0 * mean / t.iterations.max(1) as f64,
                    rows_per_iteration: t.rows.filter(|_| ALL[b].counts_rows),
                    backup_bytes: t.backup_bytes,
                    cache_clears: t.cache_clears,
                    unit_in_target: mean >= unit && mean <= 4.0 * unit,
                }
            })
            .collect()
    }
}

/// The benchmarks a run measured, as seed 003 tabulated them.
fn benchmark_table(rows: &[BenchmarkSummary]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "benchmark",
        "category",
        "iterations",
        "units",
        "mean unit (s)",
        "+-% (95%)",
        "per iteration (ms)",
        "rows",
    ]);
    for b in rows {
        t.add_row([
            format!("{} {}", b.benchmark, b.name),
            b.category.to_string(),
            b.iterations.to_string(),
            b.units.to_string(),
            format!("{:.3}", b.mean_s),
            format!("{:.1}", b.ci95_pct),
            format!("{:.2}", b.per_iteration_ms),
            b.rows_per_iteration.map_or("-".into(), |r| r.to_string()),
        ]);
    }
    for c in t.column_iter_mut().skip(1) {
        c.set_cell_alignment(comfy_table::CellAlignment::Right);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_a_scale_factor() {
        assert_eq!(scale(None).unwrap(), 1.0);
        assert_eq!(scale(Some("0.05")).unwrap(), 0.05);
        for bad in ["0", "1000", "1MB", "x"] {
            assert!(scale(Some(bad)).unwrap_err().to_string().contains("scale factor"), "{bad}");
        }
    }

    #[test]
    fn unit_iterations_are_one_number_or_pairs() {
        assert_eq!(fixed_iterations("7", &[0, 9]).unwrap()[9], Some(7));
        let f = fixed_iterations("1=12,10=3", &[0]).unwrap();
        assert_eq!((f[0], f[1], f[9]), (Some(12), None, Some(3)));
        for bad in ["0", "11=2", "a=1", "1=", "1:2"] {
            assert!(fixed_iterations(bad, &[0]).is_err(), "{bad}");
        }
    }

    #[test]
    fn options_read_back_what_they_write_and_take_a_number_or_pairs() {
        for given in [r#"{"unit_iterations": 12}"#, r#"{"unit_iterations": "1=12"}"#, r#"{"unit_time": "2s"}"#] {
            let o: Options = serde_json::from_str(given).unwrap();
            let back: Options = serde_json::from_str(&serde_json::to_string(&o).unwrap()).unwrap();
            assert_eq!((back.unit_iterations, back.unit_time), (o.unit_iterations, o.unit_time), "{given}");
        }
        let o: Options = serde_json::from_str(r#"{"unit_iterations": 12, "unit_time": "2s"}"#).unwrap();
        assert_eq!((o.unit_iterations.as_deref(), o.unit_time), (Some("12"), Duration::from_secs(2)));
    }
}
